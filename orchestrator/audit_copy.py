"""The audit's copy of one saved episode's evidence, made as a run collects it, its markers folder beside the reading.

The verdicts of an audit rest on the files it copied (its summary hashes them), so the copy comes before any reading.
Its one slow part is the markers folder: up to 20,000 small files, each costing the file system an inode, which
on some disks is seconds of an audit's time, all of it in the kernel and none of it needed before the checks read
the markers. So that folder is copied by a forked child, on another core, while this process reads the episode's JSON;
the child starts with this collection's counts and hands back what it added, so the copy is the one a sequential
copy makes: the same files, counted in the same order under the same caps, its findings in the same order.
"""

from __future__ import annotations

import json
import os
import signal
import traceback
import warnings
from itertools import islice
from pathlib import Path
from types import TracebackType
from typing import Any

from orchestrator.atif import ATIF_NAME
from orchestrator.evidence.jsonread import MAX_FILE_BYTES
from orchestrator.runtime.collect import Collection, CollectLimits, Finding

__all__ = ["CopyFailed", "EvidenceCopy", "copy_evidence"]

# Evidence copied into the audit directory, so its summary hashes the same files the verdicts rest on. What a run
# collected out of its containers is copied under the caps its collection drew on, counted as it counted them and
# in its order, so an untouched run's evidence is copied whole; what a run writes itself (the rollout, of
# any size a reader takes) is copied file by file, each up to the JSON reader's cap.
# A transport twin (`run --compare-stream`) is an episode folder of its own inside the episode's: copied whole.
_COLLECTED = ("harness.log", "native", "proxy.log", "witness.jsonl", "twin", "markers")
_UNCOUNTED = ("harness.log", "native", "proxy.log", "twin")  # a run counted what they hold, not themselves
_WRITTEN = ("rollout.json", "runtime.json", "scenario.json", ATIF_NAME)
_BESIDE = "markers"  # the last of _COLLECTED, so nothing counted after it waits for it
# Fewer files than this are copied here sooner than a child starts (a fork is a millisecond or more, and an audit
# of 10,000 episodes would pay it 10,000 times).
CHILD_FROM = 512


class CopyFailed(RuntimeError):
    """The child copying the markers did not finish its copy (it raised, or was killed)."""


class EvidenceCopy:
    """Copy `src`'s evidence into the new folder `dest`: everything at once but the markers, which a child copies
    until `wait()`. Use it as a context manager: leaving it waits for the child, or, on an interrupt, kills it."""

    def __init__(self, src: Path, dest: Path, limits: CollectLimits) -> None:
        dest.mkdir(parents=True)
        self._collection = Collection(limits)
        for name in _COLLECTED:
            if name != _BESIDE:
                self._collection.copy_tree(src / name, dest / name, name, counted=name not in _UNCOUNTED)
        # Each under a cap of its own: what the JSON reader would refuse whole is not copied either. Their findings
        # come after the markers' (noted once those are in), as in a copy made in turn.
        self._later: list[Finding] = []
        for name in _WRITTEN:
            alone = Collection(CollectLimits(max_bytes=MAX_FILE_BYTES, max_files=1))
            alone.copy_tree(src / name, dest / name, name)
            self._later += alone.findings
        self._child: tuple[int, int] | None = None
        self._done = False
        if hasattr(os, "fork") and _holds(src / _BESIDE, CHILD_FROM):
            self._child = _fork_copy(self._collection, src / _BESIDE, dest / _BESIDE)
        else:  # few markers, or no fork (Windows): they are copied here, in turn
            self._collection.copy_tree(src / _BESIDE, dest / _BESIDE, _BESIDE)

    def note(self, finding: Finding) -> None:
        """A finding of the audit's own, noted after everything the copy notes."""
        self._later.append(finding)

    def wait(self) -> Collection:
        """The whole copy's collection, once the markers are in (at once on every later call)."""
        if not self._done:
            if self._child is not None:
                pid, fd = self._child
                self._child = None
                self._adopt(_reap(pid, fd))
            for finding in self._later:
                self._collection.note(finding)
            self._later = []
            self._done = True
        return self._collection

    def _adopt(self, state: dict[str, Any]) -> None:
        c = self._collection
        c.files, c.copied, c.findings_dropped = state["files"], state["copied"], state["findings_dropped"]
        c.findings = [Finding(f["kind"], f["path"], f["reason"]) for f in state["findings"]]

    def __enter__(self) -> EvidenceCopy:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._child is None:
            return
        if kind is not None and not issubclass(kind, Exception):
            # An interrupt: the audit stops here, and so does its copy.
            child, self._child = self._child, None
            _stop(*child)
            return
        # Otherwise the copy is finished either way: the episode's result (an error's too) records it whole.
        try:
            self.wait()
        except CopyFailed:
            if kind is None:
                raise


def copy_evidence(src: Path, dest: Path, limits: CollectLimits) -> Collection:
    """The whole copy, made before returning."""
    with EvidenceCopy(src, dest, limits) as copying:
        return copying.wait()


def _holds(folder: Path, n: int) -> bool:
    """Whether `folder` (a real folder, not reached through a link) holds at least n entries now."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        with os.scandir(fd) as entries:
            return sum(1 for _ in islice(entries, n)) >= n
    finally:
        os.close(fd)


def _fork_copy(collection: Collection, src: Path, dest: Path) -> tuple[int, int]:
    """Start a child copying `src` to `dest` under `collection`'s caps; (its pid, the pipe its state comes by)."""
    r, w = os.pipe()
    with warnings.catch_warnings():
        # Python warns of forking a process with threads (a lock another thread held stays held in the child). The
        # child takes none: it makes system calls, serialises a dict of plain values, and leaves with os._exit,
        # running none of the parent's exit handlers; everything it runs was imported before the fork.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(r)
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent, told of the interrupt, kills the child
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            try:
                collection.copy_tree(src, dest, _BESIDE)
                state: dict[str, Any] = {
                    "files": collection.files,
                    "copied": collection.copied,
                    "findings": [f.to_json() for f in collection.findings],
                    "findings_dropped": collection.findings_dropped,
                }
            except BaseException:
                state = {"error": traceback.format_exc(limit=8)[-4000:]}
            data = json.dumps(state).encode()
            while data:
                data = data[os.write(w, data) :]
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    return pid, r


def _stop(pid: int, fd: int) -> None:
    """Kill the child and reap it: the copy ends with the audit."""
    os.kill(pid, signal.SIGKILL)
    os.close(fd)
    os.waitpid(pid, 0)


def _reap(pid: int, fd: int) -> dict[str, Any]:
    chunks = []
    try:
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
    except BaseException:  # an interrupt while waiting for the child
        _stop(pid, fd)
        raise
    os.close(fd)
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    if not chunks or code != 0:
        raise CopyFailed(f"the copy of the markers ended with status {code}")
    state: dict[str, Any] = json.loads(b"".join(chunks))
    if "error" in state:
        trace = str(state["error"])
        failed = CopyFailed(f"the copy of the markers failed: {trace.strip().splitlines()[-1]}")
        failed.add_note(f"in the child that copied them:\n{trace}")  # audit-error.txt shows it whole
        raise failed
    return state
