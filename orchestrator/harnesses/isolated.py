"""A normalizer in a child process with a time and memory budget: hostile native logs end as a named error."""

from __future__ import annotations

import importlib
import json
import os
import resource
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.evidence.jsonread import MAX_DEPTH, JsonFault, read_json
from orchestrator.harnesses.base import Harness, NormalizeError

__all__ = ["NormalizeBudget", "Normalizer", "normalize_isolated"]


@dataclass(frozen=True)
class NormalizeBudget:
    """Per episode: what one normalizer may spend on one native/ folder."""

    seconds: float = 120.0
    memory_bytes: int = 2 * 1024 * 1024 * 1024


def normalize_isolated(harness: Harness, native: Path, budget: NormalizeBudget | None = None) -> dict[str, Any]:
    """harness.normalize(native) run in a child; raises NormalizeError with the reason for anything but a rollout."""
    child = Normalizer(harness, budget)
    try:
        return child.run(native)
    finally:
        child.close()


class Normalizer:
    """One child process for one normalization, which may be started early: it imports the harness's module, then
    waits for its input, so the imports overlap the harness's run. The budget counts from when the input is given."""

    def __init__(self, harness: Harness, budget: NormalizeBudget | None = None) -> None:
        self.budget = budget or NormalizeBudget()
        self._target = f"{type(harness).__module__}:{type(harness).__qualname__}"
        self._options = json.dumps(harness.options)
        self._proc: subprocess.Popen[bytes] | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None

    def start(self) -> None:
        if self._proc is not None:
            return
        self._tmp = tempfile.TemporaryDirectory(prefix="probe-normalize-")
        argv = [sys.executable, "-m", __name__, self._target, self._options]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        env["PROBE_NORMALIZE_MEMORY"] = str(self.budget.memory_bytes)
        self._proc = subprocess.Popen(
            argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )

    def run(self, native: Path) -> dict[str, Any]:
        """The rollout of `native`; NormalizeError with the reason for anything else."""
        self.start()
        assert self._proc is not None and self._tmp is not None
        out = Path(self._tmp.name) / "result.json"
        order = json.dumps({"native": str(native), "out": str(out)}).encode() + b"\n"
        try:
            _, stderr = self._proc.communicate(order, timeout=self.budget.seconds)
        except subprocess.TimeoutExpired:
            self.close()
            raise NormalizeError(
                f"normalizer exceeded its time budget ({self.budget.seconds:g}s) and was killed"
            ) from None
        code = self._proc.returncode
        if code < 0:
            raise NormalizeError(f"normalizer was killed by signal {-code} (memory budget?)")
        try:
            result = read_json(out, max_depth=MAX_DEPTH + 1)
        except FileNotFoundError:
            tail = stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
            raise NormalizeError(f"normalizer failed (exit {code}): {tail[0][:300]}") from None
        except JsonFault as exc:
            raise NormalizeError(f"normalized rollout refused: {exc}") from None
        if not isinstance(result, dict) or result.get("status") not in ("ok", "error"):
            raise NormalizeError("normalizer child answered in an unknown shape")
        if result["status"] == "error":
            raise NormalizeError(str(result.get("message")))
        rollout = result.get("rollout")
        if not isinstance(rollout, dict):
            raise NormalizeError("normalizer did not return a JSON object")
        return rollout

    def close(self) -> None:
        """Kill the child if it still runs (never given its input, or over budget) and remove its folder."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        if self._proc is not None:
            for stream in (self._proc.stdin, self._proc.stderr):
                if stream is not None:
                    stream.close()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


def _child(target: str, options: str) -> None:
    memory = int(os.environ.get("PROBE_NORMALIZE_MEMORY", "0"))
    if memory:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    module, _, name = target.partition(":")
    result: dict[str, Any]
    harness: Harness | None = None
    failure: Exception | None = None
    try:  # before the input is given: this is what runs while the harness does
        harness = getattr(importlib.import_module(module), name)(json.loads(options))
    except Exception as exc:
        failure = exc
    order = json.loads(sys.stdin.readline() or "null")
    if not isinstance(order, dict):
        return  # never given its input: the episode ended without normalizing
    native, out = str(order["native"]), str(order["out"])
    try:
        if failure is not None:
            raise failure
        assert harness is not None
        rollout = harness.normalize(Path(native))
        # allow_nan=False: a NaN taken from a native log would make rollout.json not JSON.
        text = json.dumps({"status": "ok", "rollout": rollout}, allow_nan=False)
    except NormalizeError as exc:
        result = {"status": "error", "message": str(exc)}
    except MemoryError:
        result = {"status": "error", "message": f"normalizer exceeded its memory budget ({memory >> 20} MiB)"}
    except RecursionError:
        result = {"status": "error", "message": "native logs nest too deeply to normalize (RecursionError)"}
    except ValueError as exc:
        result = {"status": "error", "message": f"rollout is not JSON: {exc}"}
    except Exception as exc:  # a normalizer bug is reported for this episode, not a crash of the run
        result = {"status": "error", "message": f"normalizer crashed: {type(exc).__name__}: {exc}"}
    else:
        Path(out).write_text(text)
        return
    Path(out).write_text(json.dumps(result))


if __name__ == "__main__":
    _child(*sys.argv[1:3])
