"""Writing results: the new output directory, atomic JSON files, timestamps; low enough for every writer to use."""

from __future__ import annotations

import errno
import json
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from orchestrator.errors import OutputExists, OutputUnwritable

__all__ = ["OutputExists", "OutputUnwritable", "check_output", "make_output", "now_iso", "write_json"]

_WHY = {
    errno.EACCES: "permission denied",
    errno.EPERM: "not permitted",
    errno.ENOTDIR: "a parent is not a directory",
    errno.EROFS: "read-only file system",
    errno.ENOENT: "no directory can be created there",
    errno.ENOSPC: "no space left",
    errno.ENAMETOOLONG: "name too long",
}


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def write_json(path: Path, data: Any) -> None:
    """Atomic: a reader never sees half a file."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=False, allow_nan=False) + "\n")
    os.replace(tmp, path)


def _refuse_existing(output: Path) -> None:
    if output.exists() or output.is_symlink():
        raise OutputExists(f"output directory {output} already exists; choose a new one (results are never mixed)")


def _unwritable(output: Path, exc: OSError) -> OutputUnwritable:
    why = _WHY.get(exc.errno or 0, exc.strerror or type(exc).__name__)
    return OutputUnwritable(f"output directory {output} cannot be made: {why}")


def check_output(output: Path) -> None:
    """Before any work: the output directory does not exist and could be made (its nearest existing parent is a
    writable directory). OutputExists or OutputUnwritable say why not."""
    _refuse_existing(output)
    parent = output.absolute().parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise _unwritable(output, OSError(errno.ENOTDIR, "not a directory"))
    # Permission bits do not tell (root passes os.access on /proc, a read-only mount, a full disk): a directory is
    # made there and removed again.
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".harness-probe-check-", dir=parent))
    except OSError as exc:
        raise _unwritable(output, exc) from None


def make_output(output: Path) -> None:
    """Make the new output directory (and its parents); an existing one or one that cannot be made is an input
    error with a one-line message, never an internal error."""
    _refuse_existing(output)
    try:
        output.mkdir(parents=True)
    except FileExistsError:
        raise OutputExists(
            f"output directory {output} already exists; choose a new one (results are never mixed)"
        ) from None
    except OSError as exc:
        raise _unwritable(output, exc) from None
