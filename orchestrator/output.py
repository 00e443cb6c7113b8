"""Writing results: the new output directory, atomic JSON files, timestamps; low enough for every writer to use."""

from __future__ import annotations

import errno
import json
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from orchestrator.errors import BadOption, OutputExists, OutputUnwritable

__all__ = [
    "OutputExists",
    "OutputUnwritable",
    "check_output",
    "check_output_file",
    "check_output_folder",
    "make_output",
    "now_iso",
    "refuse_output_in_sources",
    "write_json",
    "write_output_file",
]

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


def _why(exc: OSError) -> str:
    return _WHY.get(exc.errno or 0, exc.strerror or type(exc).__name__)


def _there(path: Path, output: Path, what: str = "output directory", verb: str = "made") -> bool:
    """Whether path (a link included) is there. Path.exists() raises on Python 3.13 for any error but "not there"
    (a name too long, a folder on the way that cannot be searched): that is the output's error, named."""
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as exc:
        raise OutputUnwritable(f"{what} {output} cannot be {verb}: {_why(exc)}") from None
    return True


def _refuse_existing(output: Path) -> None:
    if _there(output, output):
        raise OutputExists(f"output directory {output} already exists; choose a new one (results are never mixed)")


def _unwritable(output: Path, exc: OSError) -> OutputUnwritable:
    return OutputUnwritable(f"output directory {output} cannot be made: {_why(exc)}")


def check_output(output: Path) -> None:
    """Before any work: the output directory does not exist and could be made (its nearest existing parent is a
    writable directory). OutputExists or OutputUnwritable say why not."""
    _refuse_existing(output)
    parent = output.absolute().parent
    while not _there(parent, output) and parent != parent.parent:
        parent = parent.parent
    if not os.path.isdir(parent):
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


def check_output_folder(output: Path) -> None:
    """Before any work, for an output that may be an existing empty folder (images export): a new one is checked as
    check_output checks it; an existing one must be a folder, listable and empty (OutputExists or OutputUnwritable
    say why not)."""
    if not _there(output, output):
        check_output(output)
        return
    if not os.path.isdir(output):
        raise OutputUnwritable(f"output directory {output} cannot be used: it is not a directory")
    try:
        with os.scandir(output) as it:
            empty = next(it, None) is None
    except OSError as exc:
        raise OutputUnwritable(f"output directory {output} cannot be used: {_why(exc)}") from None
    if not empty:
        raise OutputExists(f"output directory {output} exists and is not empty; give a new or empty directory")


def refuse_output_in_sources(output: Path, sources: list[Path]) -> None:
    """Before anything is written: an output that is a source, lies inside one or holds one would write into the
    evidence it reads (an audit then sees its input change; export and merge would mix results into their input).
    Compared resolved, so a link or `..` on the way does not hide it."""
    out = output.resolve()
    for source in sources:
        src = source.resolve()
        if out == src:
            where = f"is the source {source}"
        elif out.is_relative_to(src):
            where = f"is inside the source {source}"
        elif src.is_relative_to(out):
            where = f"holds the source {source}"
        else:
            continue
        raise BadOption(f"output directory {output} {where}; choose one outside every input")


def check_output_file(path: Path, what: str = "output file") -> None:
    """Before any work (or output) that leads to writing the file `path`: it is not a folder and its folder is an
    existing folder. OutputUnwritable names the path and what is wrong; the write itself may still fail (a full
    disk), which write_output_file names too."""
    if _there(path, path, what, "written") and os.path.isdir(path):
        raise OutputUnwritable(f"{what} {path} cannot be written: it is a directory")
    parent = path.absolute().parent
    if not _there(parent, path, what, "written"):
        raise OutputUnwritable(f"{what} {path} cannot be written: its folder {path.parent} does not exist")
    if not os.path.isdir(parent):
        raise OutputUnwritable(f"{what} {path} cannot be written: {path.parent} is not a directory")


def write_output_file(
    path: Path, text: str, what: str = "output file", mode: str = "w", *, parents: bool = False
) -> None:
    """check_output_file, then write (mode "a": append) text; an OSError of the write is OutputUnwritable too.
    parents: its missing folders are made first (one that cannot be, a file on the way, is named)."""
    if parents:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise OutputUnwritable(f"{what} {path} cannot be written: {path.parent} is not a directory") from None
        except OSError as exc:
            raise OutputUnwritable(f"{what} {path} cannot be written: {_why(exc)}") from None
    check_output_file(path, what)
    try:
        with path.open(mode, encoding="utf-8") as f:
            f.write(text)
    except OSError as exc:
        raise OutputUnwritable(f"{what} {path} cannot be written: {_why(exc)}") from None
