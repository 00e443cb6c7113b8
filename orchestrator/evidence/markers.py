"""The marker files a check reads: which of them, how much of each, and the one-file form an audit keeps them in.

A run keeps the markers folder its collection copied out of the pod. An audit does not copy that folder again (up to
20,000 small files, an inode each): it reads what a copy would hold in place, once, and writes the name -> content
map the checks read as `markers.json`, so the audit's record hashes the very bytes its verdicts rest on.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.evidence.jsonread import JsonFault, read_bytes
from orchestrator.evidence.text import is_text
from orchestrator.evidence.validate import load_json
from orchestrator.output import write_json

__all__ = [
    "FORMAT",
    "INLINE_CHARS",
    "MARKERS_FILE",
    "MARKER_BYTES",
    "MAX_MARKERS",
    "Content",
    "Digest",
    "read_folder",
    "read_markers",
    "select",
    "write_markers",
]

MAX_MARKERS = 10_000  # names read, in name order: entries past them are not markers a check looks at
MARKER_BYTES = 64 * 1024  # a longer file is no marker a tool command wrote: not read at all
MARKERS_FILE = "markers.json"
# Longer contents are kept in markers.json as their length and sha256 (Digest); a token is far shorter.
INLINE_CHARS = 1024
FORMAT = "probe-markers/v1"


def read_folder(folder: Path) -> dict[str, Content]:
    """The markers in `folder`: its first MAX_MARKERS names, the regular files among them of at most MARKER_BYTES.

    Only regular files, never through a link, each read up to its cap: an audited folder may hold anything. Each is
    opened by name from the folder's descriptor (ten thousand paths are not resolved again, link-free)."""
    out: dict[str, Content] = {}
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


@dataclass(frozen=True, eq=False)
class Digest:
    """A marker's content kept in markers.json as its length and sha256: equal to a text exactly when the text has
    that length and hash, which is all a check asks of a marker (is it the call's token?)."""

    chars: int
    sha256: str

    @classmethod
    def of(cls, text: str) -> Digest:
        return cls(len(text), _sha256(text))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Digest):
            return (self.chars, self.sha256) == (other.chars, other.sha256)
        return isinstance(other, str) and len(other) == self.chars and _sha256(other) == self.sha256

    def __hash__(self) -> int:
        return hash((self.chars, self.sha256))


# What a check reads of a marker: its text, or in an audit of a long one, its Digest.
Content = str | Digest


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def write_markers(path: Path, markers: dict[str, str]) -> None:
    """Write `markers` as markers.json: a content longer than INLINE_CHARS as a Digest, a name that is not UTF-8
    left out (a harness can make such a file), so that the verdicts stay those of the folder read in place.

    A digest, because a harness can fill the markers folder with bytes JSON writes six times over (an invalid byte
    becomes `\\ufffd`): the file would pass the reader's cap and fail every marker, where a token is a few dozen
    characters. A name that is not UTF-8 cannot be held by JSON text (it reads as a lone surrogate), and no check can
    look one up: checks look a marker up by a name made of a call id from the witness, which is Unicode text."""
    kept = {n: c if len(c) <= INLINE_CHARS else _digest_json(c) for n, c in sorted(markers.items()) if is_text(n)}
    write_json(path, {"schema": FORMAT, "markers": kept})


def _digest_json(text: str) -> dict[str, Any]:
    d = Digest.of(text)
    return {"chars": d.chars, "sha256": d.sha256}


def read_markers(path: Path) -> dict[str, Content]:
    """An audit's markers.json; a FormatError names what is wrong with it (more names or longer contents than a
    folder's reading gives are wrong too: the file stands for such a reading)."""
    data = load_json(path, FORMAT)
    return {n: c if isinstance(c, str) else Digest(c["chars"], c["sha256"]) for n, c in data["markers"].items()}
