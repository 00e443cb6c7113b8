"""An audit source's file hashes: walked in path order, kept in a spool file, compared with a second walk."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from orchestrator.evidence import Fault, FormatError, fragment_faults, validate
from orchestrator.evidence.jsonread import MAX_FILE_BYTES

__all__ = ["MAX_SOURCE_FILES", "TreeHashes", "walk", "write_audit_record"]

MAX_SOURCE_FILES = 1_000_000
_BATCH = 1000


def walk(root: Path) -> Iterator[tuple[str, str]]:
    """(path relative to root, sha256) of every regular file below root, sorted by path as strings sort.

    Links and special files are named (`not-a-file:<mode>`), never followed or read; a file over the read cap is
    named by size and time. Plain strings and one lstat per entry: an episode may hold 100,000 files.
    """
    count = [0]
    yield from _walk(os.fspath(root), "", count, str(root))


def _walk(folder: str, prefix: str, count: list[int], root: str) -> Iterator[tuple[str, str]]:
    with os.scandir(folder) as it:
        found = [(e.name, e.path, e.stat(follow_symlinks=False)) for e in it]
    # A folder sorts as its name and a slash: then its files fall where their full paths sort among the others.
    found.sort(key=lambda f: f[0] + "/" if stat.S_ISDIR(f[2].st_mode) else f[0])
    for name, path, st in found:
        rel = prefix + name
        if stat.S_ISDIR(st.st_mode):
            yield from _walk(path, rel + "/", count, root)
            continue
        count[0] += 1
        if not stat.S_ISREG(st.st_mode):
            yield rel, f"not-a-file:{stat.S_IFMT(st.st_mode):o}"
            continue
        if count[0] > MAX_SOURCE_FILES:
            raise FormatError(root, [Fault("$", f"more than {MAX_SOURCE_FILES} files; not an audit source")])
        if st.st_size > MAX_FILE_BYTES:
            # Hashing it would read it whole; its size and time still show a change.
            yield rel, f"size:{st.st_size}:mtime:{st.st_mtime_ns}"
            continue
        h = hashlib.sha256()
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            while chunk := os.read(fd, 1 << 20):
                h.update(chunk)
        finally:
            os.close(fd)
        yield rel, h.hexdigest()


class TreeHashes:
    """The walk of root as it was when taken, one JSON line per file in an unlinked spool file."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._spool = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115 (closed by close())
        for rel, digest in walk(root):
            self._spool.write(json.dumps([rel, digest]) + "\n")

    def items(self) -> Iterator[tuple[str, str]]:
        self._spool.seek(0)
        for line in self._spool:
            rel, digest = json.loads(line)
            yield rel, digest

    def changed(self) -> list[str]:
        """Paths whose content (or kind) differs from a walk taken now, or that appeared or went away."""
        out = []
        now = walk(self.root)
        then = self.items()
        a, b = next(then, None), next(now, None)
        while a is not None or b is not None:
            if b is None or (a is not None and a[0] < b[0]):
                out.append(a[0])  # type: ignore[index]
                a = next(then, None)
            elif a is None or b[0] < a[0]:
                out.append(b[0])
                b = next(now, None)
            else:
                if a[1] != b[1]:
                    out.append(a[0])
                a, b = next(then, None), next(now, None)
        return out

    def close(self) -> None:
        self._spool.close()


def write_audit_record(path: Path, record: dict[str, Any], hashes: TreeHashes) -> None:
    """audit.json as write_json would write `record` with `inputs` (every file read, by hash), in pieces.

    Validated as a whole would be: the record with no inputs, then the inputs a thousand at a time.
    """
    validate({**record, "inputs": {}}, "audit/v1", "audit.json")
    hole = "@@inputs@@"
    head, _, tail = json.dumps({**record, "inputs": hole}, indent=2, allow_nan=False).partition(json.dumps(hole))
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", encoding="utf-8") as f:
        f.write(head)
        batch: dict[str, str] = {}
        first = True
        # Only files read are listed; links and special files (never read) only guard against change.
        for rel, digest in hashes.items():
            if len(digest) != 64:
                continue
            f.write(("{" if first else ",") + f"\n    {json.dumps(rel)}: {json.dumps(digest)}")
            first = False
            batch[rel] = digest
            if len(batch) >= _BATCH:
                _check(batch)
        _check(batch)
        f.write(("{}" if first else "\n  }") + tail + "\n")
    os.replace(tmp, path)


def _check(batch: dict[str, str]) -> None:
    found = fragment_faults(batch, "audit/v1", "/properties/inputs", "$.inputs")
    if found:
        raise FormatError("audit.json", found)
    batch.clear()
