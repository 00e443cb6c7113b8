"""The marker files a check reads: which of them, how much of each, and the one-file form an audit keeps them in.

A run keeps the markers folder its collection copied out of the pod. An audit does not copy that folder again (up to
20,000 small files, an inode each): it reads what a copy would hold in place, once, and writes the name -> content
map the checks read as `markers.json`, so the audit's record hashes the very bytes its verdicts rest on.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from orchestrator.evidence.jsonread import JsonFault, read_bytes
from orchestrator.evidence.validate import load_json
from orchestrator.output import write_json

__all__ = [
    "FORMAT",
    "MARKERS_FILE",
    "MARKER_BYTES",
    "MAX_MARKERS",
    "read_folder",
    "read_markers",
    "select",
    "write_markers",
]

MAX_MARKERS = 10_000  # names read, in name order: entries past them are not markers a check looks at
MARKER_BYTES = 64 * 1024  # a longer file is no marker a tool command wrote: not read at all
MARKERS_FILE = "markers.json"
FORMAT = "probe-markers/v1"


def read_folder(folder: Path) -> dict[str, str]:
    """The markers in `folder`: its first MAX_MARKERS names, the regular files among them of at most MARKER_BYTES.

    Only regular files, never through a link, each read up to its cap: an audited folder may hold anything. Each is
    opened by name from the folder's descriptor (ten thousand paths are not resolved again, link-free)."""
    out: dict[str, str] = {}
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return out
    try:
        for name in sorted(os.listdir(fd))[:MAX_MARKERS]:
            try:
                out[name] = read_bytes(name, MARKER_BYTES, dir_fd=fd).decode(errors="replace")
            except (OSError, JsonFault):
                continue
    finally:
        os.close(fd)
    return out


def select(entries: Iterable[str], files: Mapping[str, bytes | bytearray]) -> dict[str, str]:
    """What read_folder reads from a copy holding `entries` (its names, files and folders alike), `files` of them
    regular files with the bytes copied: the same names, the same content, decoded the same way."""
    names = sorted(entries)[:MAX_MARKERS]
    return {n: files[n].decode(errors="replace") for n in names if n in files and len(files[n]) <= MARKER_BYTES}


def write_markers(path: Path, markers: dict[str, str]) -> None:
    write_json(path, {"schema": FORMAT, "markers": dict(sorted(markers.items()))})


def read_markers(path: Path) -> dict[str, str]:
    """An audit's markers.json; a FormatError names what is wrong with it (more names or longer contents than a
    folder's reading gives are wrong too: the file stands for such a reading)."""
    data = load_json(path, FORMAT)
    markers: dict[str, str] = data["markers"]
    return markers
