"""A normalizer in a child process with a time and memory budget: hostile native logs end as a named error."""

from __future__ import annotations

import contextlib
import importlib
import json
import multiprocessing
import os
import resource
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing import forkserver
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any, cast

from orchestrator.evidence.jsonread import MAX_DEPTH, JsonFault, read_json
from orchestrator.evidence.text import clean
from orchestrator.harnesses.base import Harness, NormalizeError
from orchestrator.records import Rollout
from orchestrator.tempdirs import owned_tempdir

__all__ = ["NormalizeBudget", "Normalizer", "normalize_isolated", "start_server"]

# The server imports this module (and so the harness package) once, and the main script, as multiprocessing wants
# (its `__name__` guard keeps it from running): otherwise every child would import that script itself.
_FORKS = multiprocessing.get_context("forkserver")
_FORKS.set_forkserver_preload(["__main__", __name__])


def start_server() -> None:
    """Start the normalizers' server now (its imports then overlap what the run does before the first harness ends);
    the first Normalizer starts it otherwise."""
    forkserver.ensure_running()


@dataclass(frozen=True)
class NormalizeBudget:
    """Per episode: what one normalizer may spend on one native/ folder."""

    seconds: float = 120.0
    memory_bytes: int = 2 * 1024 * 1024 * 1024


def normalize_isolated(harness: Harness, native: Path, budget: NormalizeBudget | None = None) -> Rollout:
    """harness.normalize(native) run in a child; raises NormalizeError with the reason for anything but a rollout."""
    child = Normalizer(harness, budget)
    try:
        return child.run(native)
    finally:
        child.close()


class Normalizer:
    """One child process for one normalization, which may be started early: it imports the harness's module, then
    waits for its input, so the imports overlap the harness's run. The budget counts from when the input is given.

    The child is forked from a server that imported the harness package once per run (multiprocessing's
    forkserver): a fresh interpreter per episode spent ~0.7 s of CPU on imports alone. Each child is still its own
    process with its own memory limit, killed at its deadline; the server never runs a normalizer itself.
    """

    def __init__(self, harness: Harness, budget: NormalizeBudget | None = None) -> None:
        self.budget = budget or NormalizeBudget()
        self._target = f"{type(harness).__module__}:{type(harness).__qualname__}"
        self._options = json.dumps(harness.options)
        self._proc: BaseProcess | None = None
        self._order: Connection | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._closed = False

    def start(self) -> None:
        if self._proc is not None:
            return
        self._tmp = owned_tempdir("probe-normalize-")
        receive, self._order = _FORKS.Pipe(duplex=False)
        args = (self._target, self._options, self.budget.memory_bytes, receive, self._tmp.name)
        self._proc = _FORKS.Process(target=_forked, args=args, name="normalizer", daemon=True)
        self._proc.start()
        receive.close()  # the child holds its own end: our copy would keep its reads from ever seeing EOF

    def run(self, native: Path) -> Rollout:
        """The rollout of `native`; NormalizeError with the reason for anything else."""
        self.start()
        assert self._proc is not None and self._order is not None and self._tmp is not None
        out = Path(self._tmp.name) / "result.json"
        with contextlib.suppress(OSError):  # the child died before it read its input: its exit code says why
            self._order.send_bytes(json.dumps({"native": str(native), "out": str(out)}).encode())
        self._proc.join(self.budget.seconds)
        code = self._proc.exitcode
        if code is None:
            self.close()
            raise NormalizeError(
                f"normalizer exceeded its time budget ({self.budget.seconds:g}s) and was killed"
            ) from None
        if code < 0:
            raise NormalizeError(f"normalizer was killed by signal {-code} (memory budget?)")
        try:
            result = read_json(out, max_depth=MAX_DEPTH + 1)
        except FileNotFoundError:
            tail = _tail(Path(self._tmp.name) / "stderr").strip().splitlines()[-1:] or ["no output"]
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
        return cast(Rollout, rollout)  # as the normalizer built it, read back: its shape is the checks' to judge

    def close(self) -> None:
        """Kill the child if it still runs (never given its input, or over budget) and remove its folder."""
        if self._proc is not None and not self._closed:
            if self._proc.exitcode is None:
                self._proc.kill()
                self._proc.join()
            self._proc.close()
            self._closed = True
        if self._order is not None:
            self._order.close()
            self._order = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


def _tail(path: Path, size: int = 4096) -> str:
    """The end of what a child wrote to stderr: it may have written without end."""
    try:
        with path.open("rb") as f:
            f.seek(max(0, path.stat().st_size - size))
            return f.read(size).decode(errors="replace")
    except OSError:
        return ""


def _forked(target: str, options: str, memory: int, order: Connection, folder: str) -> None:
    """The child, forked from the server: its own output files and memory limit, then `_child`."""
    null = os.open(os.devnull, os.O_WRONLY)
    err = os.open(os.path.join(folder, "stderr"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(null, 1)
    os.dup2(err, 2)
    os.close(null)
    os.close(err)

    def read_order() -> str:
        try:
            return order.recv_bytes().decode()
        except (EOFError, OSError):
            return "null"

    _child(target, options, memory, read_order)


def _child(target: str, options: str, memory: int, read_order: Callable[[], str]) -> None:
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
    order = json.loads(read_order() or "null")
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
    # A message may quote a native file name that is not UTF-8 (a lone surrogate): escaped, so the parent's strict
    # reader takes it and shows it.
    result["message"] = clean(result["message"])
    Path(out).write_text(json.dumps(result))
