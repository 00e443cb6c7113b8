"""SciCode's own records -> probe-rollout/v1: the prompt it sent per sub-step, the code it kept, the pass/fail of
running that code, and its score file.

`scicode_eval` writes, below its output dir, `prompt/<model>/<variant>/<problem>.<step>.txt` before each sub-step's
call, `generated_code/<model>/<variant>/<problem>.<step>_<sample>.py` once the call returned (the earlier steps'
code, then the python block it extracted from the reply, import lines stripped; after failed attempts it gives
up with an empty block and writes the file all the same), `logs/<model>/<variant>/<problem>.<step>_<sample>.txt`
(`pass`, `fail` or `time out`: how running that file ended) and `<model>_<variant>.json` (the scores) at the very
end. It keeps no reply, no HTTP status, no time and no token count.
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

from orchestrator.harnesses.base import NormalizeError
from orchestrator.harnesses.jsonl import loads_line
from orchestrator.records import Gap, RequestedCall, Rollout, RolloutBuilder, outcome, token_stats, tool_record

__all__ = ["normalize_output"]

VARIANTS = ("without_background", "with_background")
_PROMPT = re.compile(r"^(?P<problem>[^.]+)\.(?P<step>\d+)\.txt$")
_LOG = re.compile(r"^(?P<problem>[^.]+)\.(?P<step>\d+)_(?P<sample>\d+)\.txt$")
# How SciCode's scoring run of a sub-step's code ended (its logs/ files) -> the tool call's status.
_STATUS = {"pass": "succeeded", "fail": "failed", "time out": "failed"}
_CODE = re.compile(r"^(?P<problem>[^.]+)\.(?P<step>\d+)_(?P<sample>\d+)\.py$")

_GAPS: list[Gap] = [
    {
        "code": "model_calls.failed_attempts_unrecorded",
        "detail": "SciCode retries a call that got a non-200 status (2 attempts in all) and logs each failure only "
        "to its console; its files hold one prompt per sub-step, whatever the number of attempts",
    },
    {
        "code": "model_calls.status_code_unrecorded",
        "detail": "SciCode keeps no HTTP status: a sub-step whose attempts all failed still gets a code file, "
        "with an empty block",
    },
    {
        "code": "model_calls.times_unrecorded",
        "detail": "SciCode records no time for a call",
    },
    {
        "code": "model_calls.usage_unrecorded",
        "detail": "SciCode reads only the reply's message content: no response id, finish reason or token count",
    },
    {
        "code": "history.replies_unrecorded",
        "detail": "SciCode keeps the python block it extracted from each reply (import lines stripped, in the "
        "sub-step's code file), not the reply; nor the system prompt it sends. Every sub-step is a fresh "
        "conversation: the invocation's history is the last prompt, all prompts are in extensions.prompts",
    },
    {
        "code": "tool_calls.ids_harness_minted",
        "detail": "SciCode has no tools and the wire carries no call id: a tool call here is SciCode's scoring run "
        "of one sub-step's code, named <problem>.<step> by SciCode",
        "labels": ["E5"],
    },
    {
        "code": "tool_calls.accumulated_runs",
        "detail": "SciCode runs each sub-step's code after the last model call, together with every earlier "
        "sub-step's code (so a block runs once per later sub-step too), the final answer's block included; "
        "it records pass/fail per run and no exit code",
    },
    {
        "code": "tool_calls.output_unrecorded",
        "detail": "SciCode captures what a run printed and keeps none of it (a failing run's output goes to its "
        "console only)",
    },
    {
        "code": "outcome.unrecorded",
        "detail": "SciCode has no final answer and records no terminal error (a sub-step whose attempts all failed "
        "gets an empty block and the run goes on); its only outcome is the score file, written at the very end",
    },
]


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _variant_dirs(root: Path) -> list[Path]:
    found = [d for model in sorted(root.iterdir()) if model.is_dir() for d in (model / v for v in VARIANTS)]
    return [d for d in found if d.is_dir()]


def _numbered(directory: Path | None, pattern: re.Pattern[str]) -> dict[tuple[str, int], Path]:
    out: dict[tuple[str, int], Path] = {}
    for f in sorted(directory.iterdir()) if directory is not None and directory.is_dir() else []:
        m = pattern.match(f.name)
        if m and f.is_file() and m.groupdict().get("sample", "0") == "0":
            out[(m.group("problem"), int(m.group("step")))] = f
    return out


def normalize_output(out: Path, harness: str) -> Rollout:
    prompt_root = out / "prompt"
    if not prompt_root.is_dir():
        raise NormalizeError(f"SciCode wrote no prompt/ in {out.name}/")
    variants = _variant_dirs(prompt_root)
    if len(variants) != 1:
        raise NormalizeError(f"SciCode's prompt/ holds {len(variants)} model/variant folders, expected 1")
    prompts_dir = variants[0]
    model, variant = prompts_dir.parent.name, prompts_dir.name
    prompts = _numbered(prompts_dir, _PROMPT)
    codes = _numbered(out / "generated_code" / model / variant, _CODE)
    logs = {k: _read(p) for k, p in _numbered(out / "logs" / model / variant, _LOG).items()}
    root = min(prompts)[0] if prompts else "scicode"
    b = RolloutBuilder(harness, None, _GAPS)
    for n, key in enumerate(sorted(prompts), start=1):
        cid = b.call(
            {
                "model_call_id": f"{key[0]}.{key[1]}",
                "started_at": None,
                "completed_at": None,
                "protocol": "chat",
                "status_code": None,
                "response_id": None,
                "finish_reason": None,
                "error_category": None,
                "token_stats": token_stats(),
                "invocation_id": root,
            }
        )
        b.step(n, root, None, [cid])
        result = logs.get(key)
        if key in codes and result is not None:
            requested: RequestedCall = {
                "tool_call_id": cid,
                "tool_name": "python",
                "arguments": {"code": _read(codes[key])},
            }
            b.tool(tool_record(requested, root, n, status=_STATUS.get(result.strip())))
    last = _read(prompts[max(prompts)]) if prompts else None
    b.invocation(root, [] if last is None else [{"role": "user", "content": last}])
    scores_path = out / f"{model}_{variant}.json"
    scores = None
    with contextlib.suppress(OSError, ValueError):
        scores = loads_line(scores_path.read_text())
    return b.build(
        outcome("unknown"),
        extensions={
            "scicode_model": model,
            "scicode_variant": variant,
            "prompts": {f"{p}.{s}": _read(f) for (p, s), f in sorted(prompts.items())},
            "run_results": {f"{p}.{s}": (r or "").strip() for (p, s), r in sorted(logs.items())},
            "scores": scores,
        },
    )
