"""Fixed notes closing docs/results/README.md: the reference row, why Gym's simple_agent has no row, NOOA's results."""

from __future__ import annotations

__all__ = ["MATRIX_NOTES"]

MATRIX_NOTES = """\
## The reference row, and Gym's `simple_agent`

The `reference` harness is harness-probe's own small agent (`images/reference/`), a **control**: in its
honest mode it reports everything the checks ask for, so its all-✓ row shows that the checks can pass on a
real run through the real proxy; its misreporting modes (`--harness-arg mode=...`) lie on purpose, one
lie per check. It is not a harness anyone runs in production, not a port of any real agent loop, and its
row says nothing about any other harness.

The seed list named NeMo Gym's `simple_agent` (`responses_api_agents/simple_agent`), Gym's internal
reference tool loop. The reference harness plays that role here; `simple_agent` itself has no row,
because `nemo-gym` 0.7.0 cannot be run in one container against the proxy on this project's images:

- **Python.** `nemo-gym` 0.5.0 to 0.7.0 declare `Requires-Python >=3.13.14` (checked on the 0.7.0 wheel).
  Every image here is built on Debian trixie, whose Python is 3.13.5; pip refuses the wheel, and the
  only newer CPython builds (uv's managed interpreters) are downloaded from outside the package
  registries this project may use. `nemo-gym` 0.4.0 is the newest release that installs on 3.13.5.
- **A venv per server, built at start.** `gym env start` runs each server (agent, model, resources)
  from its own venv, made with `uv venv --python <version>` and `uv pip install nemo-gym==<version>
  -r requirements.txt` when the server starts (`nemo_gym/cli/setup_command.py`); offline this needs
  venvs pre-built in the image and `+skip_venv_if_present=true`, each pulling Gym's full dependency
  set (Ray, MLflow, W&B, datasets, pyarrow, scipy).
- **No shell tool.** `simple_agent` executes nothing itself: every tool call is POSTed to
  `/<tool name>` on a resources server, and none of Gym's servers offers a shell command tool. Probing
  it needs a resources server of ours (`POST /bash {command}` returning output and exit code) and a
  dataset row advertising that tool.
- **Its record.** What it reports is the rollout line `gym eval run` writes (Responses API output
  items, no HTTP statuses or failed attempts), plus `ng_trajectory` when model-call capture is on.

## NOOA's tool results

NOOA (BenchAgent) answers each `execute_python` call's tool message with `status: complete` and shows the
cell's output to the model in a later user message (`PythonOutput(tool_call_id=..., stdout=...)`). The
witness reads that printed text as the call's result, since it is what the model saw of it; NOOA's recorded
history keeps `status: complete` as the tool message, which is what `history.witness_results` names.
"""
