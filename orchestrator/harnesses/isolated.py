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

__all__ = ["NormalizeBudget", "normalize_isolated"]


@dataclass(frozen=True)
class NormalizeBudget:
    """Per episode: what one normalizer may spend on one native/ folder."""

    seconds: float = 120.0
    memory_bytes: int = 2 * 1024 * 1024 * 1024


def normalize_isolated(harness: Harness, native: Path, budget: NormalizeBudget | None = None) -> dict[str, Any]:
    """harness.normalize(native) run in a child; raises NormalizeError with the reason for anything but a rollout."""
    budget = budget or NormalizeBudget()
    target = f"{type(harness).__module__}:{type(harness).__qualname__}"
    with tempfile.TemporaryDirectory(prefix="probe-normalize-") as tmp:
        out = Path(tmp) / "result.json"
        argv = [sys.executable, "-m", __name__, target, json.dumps(harness.options), str(native), str(out)]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        env["PROBE_NORMALIZE_MEMORY"] = str(budget.memory_bytes)
        try:
            proc = subprocess.run(argv, env=env, capture_output=True, timeout=budget.seconds, check=False)
        except subprocess.TimeoutExpired:
            raise NormalizeError(f"normalizer exceeded its time budget ({budget.seconds:g}s) and was killed") from None
        if proc.returncode < 0:
            raise NormalizeError(f"normalizer was killed by signal {-proc.returncode} (memory budget?)")
        try:
            result = read_json(out, max_depth=MAX_DEPTH + 1)
        except FileNotFoundError:
            tail = proc.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
            raise NormalizeError(f"normalizer failed (exit {proc.returncode}): {tail[0][:300]}") from None
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


def _child(target: str, options: str, native: str, out: str) -> None:
    memory = int(os.environ.get("PROBE_NORMALIZE_MEMORY", "0"))
    if memory:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    module, _, name = target.partition(":")
    result: dict[str, Any]
    try:
        harness = getattr(importlib.import_module(module), name)(json.loads(options))
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
    _child(*sys.argv[1:5])
