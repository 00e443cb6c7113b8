"""An audit source's file hashes: walked in path order, kept in a spool file, compared with a second walk."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
import time
from collections.abc import Iterator
from json.encoder import encode_basestring_ascii as _string  # what json.dumps writes for a str
from pathlib import Path
from typing import Any

from orchestrator.evidence import Fault, FormatError, fragment_faults, validate
from orchestrator.evidence.jsonread import MAX_FILE_BYTES
from orchestrator.evidence.text import is_text
from orchestrator.runtime.tarstream import MAX_TREE_DEPTH

__all__ = ["MAX_SOURCE_FILES", "TreeHashes", "walk", "write_audit_record"]

MAX_SOURCE_FILES = 1_000_000
_BATCH = 1000


_O_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_O_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_READ = 1 << 20
_SIZED = "size:"  # what stands for a file not read: its size and modification time
_QUOTE = '"'
# A file whose status last changed this long before the first walk began is "settled": any write since would have
# set its change time (the kernel's clock, never settable by a user; coarse to a tick or, on some file systems, a
# second) past the one recorded, so an unchanged status proves unchanged content without reading it again.
SETTLED_NS = 2_000_000_000
_sha256 = hashlib.sha256


def walk(root: Path) -> Iterator[tuple[str, str]]:
    """(path relative to root, sha256) of every regular file below root, sorted by path as strings sort.

    Links and special files are named (`not-a-file:<mode>`), never followed, opened or read; a file over the read
    cap is named by size and time; a folder deeper than MAX_TREE_DEPTH is named (`<path>/`), not entered; a file or
    folder that cannot be opened or read is named with the system's reason (`unreadable:<reason>`).
    """
    for rel, mode, folder, name in _files(root):
        yield rel, _describe(mode, folder, name)[0]


class _Budget:
    """Bytes a walk may still read to hash files: past it a file is named by its size and time, as one over the read
    cap is. A harness can leave a hundred sparse files of 255 MiB that take no disk and minutes to read."""

    def __init__(self, left: int | None) -> None:
        self.left = left

    def take(self, size: int) -> bool:
        if self.left is None:
            return True
        if size > self.left:
            return False
        self.left -= size
        return True


def _describe(mode: int, folder: int, name: str, budget: _Budget | None = None) -> tuple[str, os.stat_result | None]:
    """What stands for a listed file in the walk: _digest's for a regular file, its kind for anything else, and
    for a folder _files did not enter, why not when it cannot be opened."""
    if mode == stat.S_IFREG:
        return _digest(folder, name, budget)
    if mode == stat.S_IFDIR:
        try:
            os.close(os.open(name, _O_DIR, dir_fd=folder))
        except OSError as exc:
            return _unreadable(exc), None
    return f"not-a-file:{mode:o}", None


def _unreadable(exc: OSError) -> str:
    # Not a hash (never 64 hex digits): left out of audit.json's inputs as links are, and it still shows a change
    # when the file becomes readable or fails another way. A system's reason holds no tab (the spool's separator).
    return f"unreadable:{exc.strerror or type(exc).__name__}"


def _files(root: Path) -> Iterator[tuple[str, int, int, str]]:
    """(path relative to root, kind, its folder's descriptor, name) of every file below root, in path order.

    The descriptor is valid until the next file is asked for. An episode may hold 100,000 files: each folder is
    opened once and its entries are reached by name relative to it (no path is resolved twice, and no link below
    root is ever followed); kinds come from the folder listing.
    """
    count = 0
    top = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # root itself may be reached by a link
    stack: list[tuple[int, str, Iterator[tuple[str, int]]]] = []
    try:
        stack.append((top, "", iter(_entries(top))))
        while stack:
            fd, prefix, entries = stack[-1]
            for name, mode in entries:
                if mode == stat.S_IFDIR and len(stack) > MAX_TREE_DEPTH:
                    # Past the collection's depth cap (which no run's copy goes beyond) a folder is named, not
                    # entered: the walk holds one descriptor a level, and the common limit is 1,024. Named with its
                    # slash, it keeps the place in path order its contents would have had.
                    yield prefix + name + "/", mode, fd, name
                    continue
                if mode == stat.S_IFDIR:
                    try:
                        sub = os.open(name, _O_DIR, dir_fd=fd)
                    except OSError:
                        # A folder that cannot be opened (no permission) is named like one past the cap; the
                        # walk's reader says why (_describe).
                        yield prefix + name + "/", mode, fd, name
                        continue
                    stack.append((sub, prefix + name + "/", iter(_entries(sub))))
                    break
                count += 1
                if mode == stat.S_IFREG and count > MAX_SOURCE_FILES:
                    raise FormatError(
                        str(root), [Fault("$", f"more than {MAX_SOURCE_FILES} files; not an audit source")]
                    )
                yield prefix + name, mode, fd, name
            else:
                stack.pop()
                os.close(fd)
    finally:
        for fd, _, _ in stack:
            os.close(fd)


def _status(st: os.stat_result) -> str:
    return f"{st.st_dev}:{st.st_ino}:{st.st_mode:o}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


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


def _digest(folder: int, name: str, budget: _Budget | None = None) -> tuple[str, os.stat_result | None]:
    """The file's hash (or what stands for it) and its status as read through the descriptor it was read by."""
    try:
        return _read_digest(folder, name, budget)
    except OSError as exc:
        # A saved file the audit cannot read (no permission, an I/O error) is the evidence's fault, not a crash:
        # named with the reason, as a link is named by its kind.
        return _unreadable(exc), None


def _sized(st: os.stat_result) -> str:
    return f"{_SIZED}{st.st_size}:mtime:{st.st_mtime_ns}"


def _read_digest(folder: int, name: str, budget: _Budget | None) -> tuple[str, os.stat_result | None]:
    fd = os.open(name, _O_FILE, dir_fd=folder)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return f"not-a-file:{stat.S_IFMT(st.st_mode):o}", None  # it changed kind since it was listed
        if st.st_size > MAX_FILE_BYTES or (budget is not None and not budget.take(st.st_size)):
            # Hashing it would read it whole; its size and time still show a change.
            return _sized(st), None
        # Sized to the file (a 1 MiB buffer for each of 100,000 small files costs more than reading them), and
        # one byte more: a read that comes back short has met the end, so most files take a single read.
        want = st.st_size + 1
        if want <= _READ:
            chunk = os.read(fd, want)
            h = _sha256(chunk)
            if len(chunk) < want:
                return h.hexdigest(), st
        else:
            h = _sha256()
        while chunk := os.read(fd, _READ):
            h.update(chunk)
        return h.hexdigest(), st
    finally:
        os.close(fd)


class TreeHashes:
    """The walk of root as it was when taken, one line per file in an unlinked spool file.

    `settled_before`: files whose status changed before this time (ns since the epoch, the kernel's clock) are
    compared by status in the second walk, not read again (default: SETTLED_NS before this walk begins).
    `read_budget`: bytes read to hash files, in path order; a file past it is named by size and time (no limit
    when None).
    """

    def __init__(self, root: Path, settled_before: int | None = None, read_budget: int | None = None) -> None:
        self.root = root
        settled = time.time_ns() - SETTLED_NS if settled_before is None else settled_before
        # `<digest>\t<status>\t<path>` per line (status empty unless the file had settled): neither a digest nor a
        # status holds a tab, and a path that could be misread (a newline, a lone surrogate, a leading quote) is
        # written as a JSON string instead.
        self._spool = tempfile.TemporaryFile("w+", encoding="utf-8", newline="\n")  # noqa: SIM115 (closed by close())
        write = self._spool.write
        budget = _Budget(read_budget)
        for rel, mode, folder, name in _files(root):
            digest, st = _describe(mode, folder, name, budget)
            status = _status(st) if st is not None and st.st_ctime_ns < settled else ""
            write(f"{digest}\t{status}\t{rel if rel.isprintable() and rel[:1] != _QUOTE else json.dumps(rel)}\n")

    def _lines(self) -> Iterator[tuple[str, str, str]]:
        self._spool.seek(0)
        for line in self._spool:
            digest, status, rel = line[:-1].split("\t", 2)
            yield (json.loads(rel) if rel[:1] == _QUOTE else rel), digest, status

    def items(self) -> Iterator[tuple[str, str]]:
        for rel, digest, _ in self._lines():
            yield rel, digest

    def changed(self) -> list[str]:
        """Paths whose content (or kind) differs from a walk taken now, or that appeared or went away.

        A settled file whose status (device, inode, mode, size, modification and change times) is as it was has
        not been written since: it is not read again (an audit source may hold 100,000 files). Any other file is
        hashed again and compared by content, as the first walk hashed it.
        """
        out = []
        now = _files(self.root)
        then = self._lines()
        a, b = next(then, None), next(now, None)
        while a is not None or b is not None:
            if b is None or (a is not None and a[0] < b[0]):
                out.append(a[0])  # type: ignore[index]
                a = next(then, None)
            elif a is None or b[0] < a[0]:
                out.append(b[0])
                b = next(now, None)
            else:
                if not _unchanged(b, a[1], a[2]):
                    out.append(a[0])
                a, b = next(then, None), next(now, None)
        return out

    def close(self) -> None:
        self._spool.close()


def _unchanged(file: tuple[str, int, int, str], digest: str, status: str) -> bool:
    _, mode, folder, name = file
    if mode != stat.S_IFREG:
        return digest == _describe(mode, folder, name)[0]
    if digest.startswith(_SIZED):
        # Not read the first time (too large, or past the budget): compared as it was named, never read now.
        try:
            return _sized(os.stat(name, dir_fd=folder, follow_symlinks=False)) == digest
        except OSError:
            return False
    if status:
        try:
            if _status(os.stat(name, dir_fd=folder, follow_symlinks=False)) == status:
                return True
        except OSError:
            pass  # gone or unreadable since it was listed: the read below says so, as it always did
    return _digest(folder, name)[0] == digest


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
            # A path that is not UTF-8 (a harness's file name) cannot be a key of JSON text: it guards, unlisted.
            if len(digest) != 64 or not is_text(rel):
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
