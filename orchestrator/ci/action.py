"""The composite action's probe step (action.yml): its inputs, read from the environment, as harness-probe runs.

Inputs are hostile: they arrive as environment variables (never interpolated into a shell script), every value
becomes one argv element of a command run without a shell, and each is checked against what its option accepts
(a value that would read as an option is refused), so no input can run a command or add an option of its own
outside `args`, whose words are only ever options of `run` and never the output directory.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from orchestrator.evidence import validate
from orchestrator.runtime.select import RUNTIMES

__all__ = ["INPUTS", "ActionError", "Leg", "assemble", "main", "read_inputs"]

# action.yml input -> environment variable its `env:` sets for this step.
INPUTS = {
    "harness": "HP_HARNESS",
    "scenario": "HP_SCENARIO",
    "runtime": "HP_RUNTIME",
    "harness-source": "HP_HARNESS_SOURCE",
    "harness-version": "HP_HARNESS_VERSION",
    "args": "HP_ARGS",
    "fail-on": "HP_FAIL_ON",
}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_SCENARIO = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,199}")
_VERSION = re.compile(r"(?:([A-Za-z0-9][A-Za-z0-9._-]*)=)?([A-Za-z0-9][A-Za-z0-9.+_-]{0,63})")
# Options of `run` the action sets itself: `args` may not set them again (the evidence must land where it uploads).
_OWN = {"-o", "--output", "-H", "--harness", "--log-format"}
_SHORT_WITH_VALUE = "Hosaj"  # `run`'s short options that take a value: the rest of a cluster is that value
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class ActionError(ValueError):
    """An input the action refuses; the message names the input and why."""


@dataclass(frozen=True)
class Leg:
    harness: str
    runtime: str
    folder: Path  # leg.json, probe.log and run/ (what `ci report` reads)
    argv: list[str]


def read_inputs(env: dict[str, str]) -> dict[str, str]:
    return {name: env.get(var, "").strip() for name, var in INPUTS.items()}


def _words(value: str) -> list[str]:
    return [w for w in re.split(r"[\s,]+", value) if w]


def _checked(pattern: re.Pattern[str], value: str, what: str) -> str:
    if not pattern.fullmatch(value):
        raise ActionError(f"input {what}: {value!r} is not allowed (letters, digits, . _ - only; no leading -)")
    return value


def _per_harness(value: str, harnesses: list[str], what: str) -> dict[str, str]:
    """`[HARNESS=]VALUE` words: a bare value belongs to the only harness; with several, each names its harness."""
    out: dict[str, str] = {}
    for word in _words(value):
        name, sep, rest = word.partition("=")
        if not sep:
            if len(harnesses) != 1:
                raise ActionError(
                    f"input {what}: {word!r} must name its harness (HARNESS=VALUE) with several harnesses"
                )
            name, rest = harnesses[0], word
        if name not in harnesses:
            raise ActionError(f"input {what}: {name!r} is not one of the harnesses probed ({', '.join(harnesses)})")
        if name in out:
            raise ActionError(f"input {what}: harness {name!r} given twice")
        out[name] = rest
    return out


def _source(raw: str, workspace: Path) -> str:
    path = (workspace / raw).resolve()  # absolute, so it can never read as an option
    if not path.exists():
        raise ActionError(f"input harness-source: {raw!r} does not exist in the workspace ({path})")
    return str(path)


def _extra_args(raw: str) -> list[str]:
    try:
        words = shlex.split(raw)
    except ValueError as exc:
        raise ActionError(f"input args: not shell words: {exc}") from None
    for w in words:
        if _CONTROL.search(w):
            raise ActionError(f"input args: {w!r} holds a control character")
        own = _own_option(w)
        if own:
            raise ActionError(f"input args: {own} is set by the action itself")
    return words


def _own_option(word: str) -> str | None:
    """The action's own option `word` sets, in any spelling: `-o x`, `-ox`, `-vHpi`, `--output=x`, `--out=x`."""
    if word.startswith("--"):
        name = word.split("=", 1)[0]
        # click accepts no abbreviations, but refuse them anyway: a prefix of an own option is no option of `args`.
        return next((o for o in _OWN if o.startswith("--") and len(name) > 2 and o.startswith(name)), None)
    if word.startswith("-") and len(word) > 1:
        # A cluster of short options, read as click reads it: flags until one that takes a value (the rest).
        for c in word[1:]:
            if f"-{c}" in _OWN:
                return f"-{c}"
            if c in _SHORT_WITH_VALUE:
                break
    return None


def assemble(inputs: dict[str, str], workspace: Path, evidence: Path, exe: str = "harness-probe") -> list[Leg]:
    """One leg per harness: the `harness-probe run` argv and the folder its evidence goes to."""
    harnesses = [_checked(_NAME, h, "harness") for h in _words(inputs.get("harness", ""))]
    if not harnesses:
        raise ActionError("input harness: name at least one harness (e.g. pi)")
    if len(set(harnesses)) != len(harnesses):
        raise ActionError("input harness: a harness is named twice")
    runtime = inputs.get("runtime") or "docker"
    if runtime not in RUNTIMES:
        raise ActionError(f"input runtime: {runtime!r} is not one of {', '.join(RUNTIMES)}")
    scenarios = [_checked(_SCENARIO, s, "scenario") for s in _words(inputs.get("scenario", ""))]
    versions = _per_harness(inputs.get("harness-version", ""), harnesses, "harness-version")
    for v in versions.values():
        _checked(_VERSION, v, "harness-version")
    sources = {h: _source(p, workspace) for h, p in _per_harness(inputs.get("harness-source", ""), harnesses,
                                                                   "harness-source").items()}  # fmt: skip
    both = sorted(set(versions) & set(sources))
    if both:
        raise ActionError(f"harness {both[0]!r}: give harness-version or harness-source, not both")
    extra = _extra_args(inputs.get("args", ""))
    legs = []
    for h in harnesses:
        folder = evidence / f"{h}-{runtime}"
        argv = [exe, "--log-format", "json", "run", "-H", h, "-o", str(folder / "run")]
        argv += [a for s in scenarios for a in ("-s", s)]
        if runtime != "docker":
            argv += ["--runtime", runtime]
        if h in versions:
            argv += ["--harness-version", versions[h]]
        if h in sources:
            argv += ["--harness-source", sources[h]]
        legs.append(Leg(h, runtime, folder, argv + extra))
    return legs


def _command_data(text: str) -> str:
    """Text made safe as workflow command data (GitHub's escaping): a line break cannot start a command."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _run_leg(leg: Leg) -> int:
    leg.folder.mkdir(parents=True, exist_ok=True)
    print(f"::group::{_command_data(shlex.join(leg.argv))}", flush=True)
    with (leg.folder / "probe.log").open("wb") as log:
        code = subprocess.run(leg.argv, stderr=log, check=False).returncode
    print("::endgroup::", flush=True)
    record = {"schema": "ci-leg/v1", "harness": leg.harness, "runtime": leg.runtime, "exit_code": code}
    validate(record, "ci-leg/v1", "leg.json")
    (leg.folder / "leg.json").write_text(json.dumps(record) + "\n")
    return code


def _append(path: str | None, text: str) -> None:
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(text)


def main(env: dict[str, str] | None = None, exe: str | None = None) -> int:
    """Probe every leg, write the check summary and the outputs; exit as `fail-on` says (p0: 1 or 2; error: 2)."""
    env = dict(os.environ if env is None else env)
    # The harness-probe installed beside this Python (the action's own venv), never one found on PATH.
    exe = exe or str(Path(sys.executable).with_name("harness-probe"))
    workspace = Path(env.get("GITHUB_WORKSPACE") or ".")
    evidence = Path(env.get("HP_EVIDENCE") or Path(env.get("RUNNER_TEMP") or ".") / "harness-probe-evidence")
    inputs = read_inputs(env)
    fail_on = inputs["fail-on"] or "p0"
    try:
        if fail_on not in ("p0", "error"):
            raise ActionError(f"input fail-on: {fail_on!r} is not p0 or error")
        legs = assemble(inputs, workspace, evidence, exe)
    except ActionError as exc:
        print(f"::error::harness-probe action: {exc}", flush=True)
        return 2
    codes = [_run_leg(leg) for leg in legs]
    report = subprocess.run(
        [exe, "ci", "report", *(str(leg.folder) for leg in legs)], capture_output=True, text=True, check=False
    )
    _append(env.get("GITHUB_STEP_SUMMARY"), report.stdout)
    worst = max([*codes, report.returncode if report.returncode in (0, 1, 2) else 2])
    _append(env.get("GITHUB_OUTPUT"), f"evidence={evidence}\nexit-code={worst}\n")
    if worst >= 2:
        print(f"::error::harness-probe: a measurement is unavailable (exit {worst}); see the evidence", flush=True)
    return worst if (fail_on == "p0" or worst >= 2) else 0


if __name__ == "__main__":
    sys.exit(main())
