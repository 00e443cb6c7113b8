"""An audit source's file hashes: walked in path order, kept in a spool file, compared with a second walk."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Iterator
from json.encoder import encode_basestring_ascii as _string  # what json.dumps writes for a str
from pathlib import Path
from typing import Any

from orchestrator.evidence import Fault, FormatError, fragment_faults, validate
from orchestrator.evidence.jsonread import MAX_FILE_BYTES

__all__ = ["MAX_SOURCE_FILES", "TreeHashes", "walk", "write_audit_record"]

MAX_SOURCE_FILES = 1_000_000
_BATCH = 1000


_O_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_O_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_READ = 1 << 20
_QUOTE = '"'


def walk(root: Path) -> Iterator[tuple[str, str]]:
    """(path relative to root, sha256) of every regular file below root, sorted by path as strings sort.

    Links and special files are named (`not-a-file:<mode>`), never followed, opened or read; a file over the read
    cap is named by size and time. An episode may hold 100,000 files: each folder is opened once and its entries
    are opened by name relative to it (no path is resolved twice, and no link below root is ever followed); kinds
    come from the folder listing, and a regular file is stat'ed through the descriptor it is read by.
    """
    count = 0
    top = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # root itself may be reached by a link
    stack: list[tuple[int, str, Iterator[tuple[str, int]]]] = []
    try:
        stack.append((top, "", iter(_entries(top))))
        while stack:
            fd, prefix, entries = stack[-1]
            for name, mode in entries:
                if mode == stat.S_IFDIR:
                    sub = os.open(name, _O_DIR, dir_fd=fd)
                    stack.append((sub, prefix + name + "/", iter(_entries(sub))))
                    break
                count += 1
                if mode != stat.S_IFREG:
                    yield prefix + name, f"not-a-file:{mode:o}"
                    continue
                if count > MAX_SOURCE_FILES:
                    raise FormatError(
                        str(root), [Fault("$", f"more than {MAX_SOURCE_FILES} files; not an audit source")]
                    )
                yield prefix + name, _digest(fd, name)
            else:
                stack.pop()
                os.close(fd)
    finally:
        for fd, _, _ in stack:
            os.close(fd)


def _entries(fd: int) -> list[tuple[str, int]]:
    """A folder's (name, file type) pairs, sorted as their full paths sort: a folder as its name and a slash.

    The type is the listing's own (no stat per entry) where the file system gives it; lstat otherwise.
    """
    found = []
    with os.scandir(fd) as it:
        for e in it:
            if e.is_dir(follow_symlinks=False):
                found.append((e.name, stat.S_IFDIR))
            elif e.is_file(follow_symlinks=False):
                found.append((e.name, stat.S_IFREG))
            else:
                found.append((e.name, stat.S_IFMT(e.stat(follow_symlinks=False).st_mode)))
    found.sort(key=lambda f: f[0] + "/" if f[1] == stat.S_IFDIR else f[0])
    return found


def _digest(folder: int, name: str) -> str:
    fd = os.open(name, _O_FILE, dir_fd=folder)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return f"not-a-file:{stat.S_IFMT(st.st_mode):o}"  # it changed kind since it was listed
        if st.st_size > MAX_FILE_BYTES:
            # Hashing it would read it whole; its size and time still show a change.
            return f"size:{st.st_size}:mtime:{st.st_mtime_ns}"
        # Sized to the file (a 1 MiB buffer for each of 100,000 small files costs more than reading them), and
        # one byte more: a read that comes back short has met the end, so most files take a single read.
        want = st.st_size + 1
        h = hashlib.sha256()
        if want <= _READ:
            chunk = os.read(fd, want)
            h.update(chunk)
            if len(chunk) < want:
                return h.hexdigest()
        while chunk := os.read(fd, _READ):
            h.update(chunk)
        return h.hexdigest()
    finally:
        os.close(fd)


class TreeHashes:
    """The walk of root as it was when taken, one JSON line per file in an unlinked spool file."""

    def __init__(self, root: Path) -> None:
        self.root = root
        # `<digest>\t<path>` per line: a digest holds no tab, and a path that could be misread (a newline, a
        # lone surrogate, a leading quote) is written as a JSON string instead.
        self._spool = tempfile.TemporaryFile("w+", encoding="utf-8", newline="\n")  # noqa: SIM115 (closed by close())
        write = self._spool.write
        for rel, digest in walk(root):
            write(f"{digest}\t{rel if rel.isprintable() and rel[:1] != _QUOTE else json.dumps(rel)}\n")

    def items(self) -> Iterator[tuple[str, str]]:
        self._spool.seek(0)
        for line in self._spool:
            digest, _, rel = line[:-1].partition("\t")
            yield (json.loads(rel) if rel[:1] == _QUOTE else rel), digest

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
            f.write(("{" if first else ",") + f"\n    {_string(rel)}: {_string(digest)}")
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
