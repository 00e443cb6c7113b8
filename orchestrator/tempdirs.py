"""Temporary folders on the host that name the process that made them, so a killed run's can be told and removed."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

import structlog

from orchestrator.runtime.spec import Owner

__all__ = ["KINDS", "OWNER_FILE", "owned_tempdir", "sweep_tempdirs"]

log = structlog.get_logger(__name__)

# The folders a run or an audit makes in the temporary directory, by prefix: a normalizer's output, a copy of a
# harness's SQLite store. Each is removed by its maker; one whose maker was killed (SIGKILL, OOM) stays, and may
# hold a whole normalized rollout.
KINDS = ("probe-normalize-", "probe-sqlite-")
OWNER_FILE = ".owner"
_OWNER_BYTES = 4096  # an owner label is host/pid/start-time: anything longer was not written by us


def owned_tempdir(prefix: str) -> tempfile.TemporaryDirectory[str]:
    """A TemporaryDirectory whose OWNER_FILE names this process (host, pid, start time), for `sweep_tempdirs`.

    Written before the folder is handed out: a sweep that finds a folder with no owner yet leaves it alone.
    """
    if prefix not in KINDS:
        raise ValueError(f"unknown temporary folder kind {prefix!r} (known: {', '.join(KINDS)})")
    tmp = tempfile.TemporaryDirectory(prefix=prefix)
    try:
        (Path(tmp.name) / OWNER_FILE).write_text(Owner.this_process().label())
    except BaseException:
        tmp.cleanup()
        raise
    return tmp


def sweep_tempdirs(root: Path | None = None) -> list[str]:
    """Remove the folders of KINDS under `root` (the temporary directory) whose maker is surely dead; their paths.

    Only what is surely a killed process's: a folder (not a link) of this user, whose OWNER_FILE names this
    machine and a pid that is gone or now another process. A live process's folder is its own to remove; a folder
    with no owner (a version before owners, or one being made) or another user's is never touched. Never raises:
    what cannot be removed is logged and left.
    """
    base = root if root is not None else Path(tempfile.gettempdir())
    here = Owner.this_process()
    removed: list[str] = []
    try:
        entries = [e for e in os.scandir(base) if e.name.startswith(KINDS)]
    except OSError as exc:
        log.warning("temporary folders not swept: the folder cannot be listed", folder=str(base), error=str(exc))
        return removed
    for entry in entries:
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue  # gone since the listing
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            continue
        owner = _owner(Path(entry.path))
        if owner is None or not owner.is_dead(here):
            continue
        try:
            shutil.rmtree(entry.path)  # descends by file descriptor: a link inside is removed, never followed
        except FileNotFoundError:
            continue
        except OSError as exc:
            log.warning("a killed run's temporary folder could not be removed", folder=entry.path, error=str(exc))
            continue
        removed.append(entry.path)
    return removed


def _owner(folder: Path) -> Owner | None:
    try:
        # Not a link's target; a FIFO opens at once and reads empty (a folder fails to read).
        fd = os.open(folder / OWNER_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        raw = os.read(fd, _OWNER_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(raw) > _OWNER_BYTES or not raw.isascii():
        return None
    return Owner.parse(raw.decode("ascii"))
