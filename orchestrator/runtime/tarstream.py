"""Our own tar reader: an engine's archive stream unpacked below a folder, regular files and folders only, never
through a link, within what is left of a collection's caps and deadline."""

from __future__ import annotations

import contextlib
import os
import stat
import tarfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Protocol

from orchestrator.evidence.text import clean

__all__ = ["BLOCK", "CHUNK", "MAX_TREE_DEPTH", "O_DIR", "O_NEW", "Budget", "Finding", "Stop", "unpack"]

# The one depth cap of a collected folder tree (path components below what is copied): real logs nest under a dozen;
# a tree 1,000 deep breaks every later reader (recursion, one descriptor per level), so it is not collected past
# this, and the run records it as a finding.
MAX_TREE_DEPTH = 64

BLOCK = 512
MAX_HEADER_DATA = 64 * 1024  # pax and GNU long-name records: real ones are a few hundred bytes
CHUNK = 64 * 1024
O_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
O_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC

_REGULAR = {tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.CONTTYPE}
_SKIPPED = {
    tarfile.SYMTYPE: ("symlink", "symbolic links are not followed or copied"),
    tarfile.LNKTYPE: ("hardlink", "hard links are not copied"),
    tarfile.FIFOTYPE: ("fifo", "named pipes are not copied"),
    tarfile.CHRTYPE: ("device", "character devices are not copied"),
    tarfile.BLKTYPE: ("device", "block devices are not copied"),
}


@dataclass(frozen=True)
class Finding:
    """Something the harness left that was not copied: what it was, where, and why."""

    kind: str
    path: str
    reason: str

    def to_json(self) -> dict[str, str]:
        # A path from the archive may be any bytes (surrogate escapes): written as escapes, never raw.
        return {"kind": self.kind, "path": clean(self.path), "reason": clean(self.reason)}


class Stop(Exception):
    """The rest of this archive (or copy) is not read: a cap was reached or the stream is unusable."""

    def __init__(self, kind: str, path: str, reason: str) -> None:
        super().__init__(reason)
        self.finding = Finding(kind, path, reason)


class Limits(Protocol):
    @property
    def max_bytes(self) -> int: ...
    @property
    def max_files(self) -> int: ...
    @property
    def seconds(self) -> float: ...


class Budget(Protocol):
    """What an unpacking draws on and reports to (a Collection)."""

    copied: int
    files: int

    @property
    def limits(self) -> Limits: ...
    def note(self, finding: Finding) -> None: ...
    def remaining_seconds(self) -> float: ...


def unpack(budget: Budget, chunks: Iterable[bytes], root: int, source: str, rooted_names: bool) -> None:
    """Unpack the archive of `source` below the open folder `root`; raises Stop when the rest is not read."""
    top = PurePosixPath(source).name if rooted_names else None
    _Extractor(budget, _Raw(iter(chunks), budget, source), root, PurePosixPath(source).parent, top).run()


class _Raw:
    """The engine's byte stream, read in order, never past this archive's share of the caps or the deadline."""

    def __init__(self, chunks: Iterator[bytes], budget: Budget, source: str) -> None:
        self._chunks = chunks
        self._buf = bytearray()
        self._budget = budget
        self._source = source
        # Headers and padding come on top of the data: a bounded allowance per member still possible.
        lim = budget.limits
        self._cap = max(0, lim.max_bytes - budget.copied) + 3 * BLOCK * (max(0, lim.max_files - budget.files) + 2)
        self.read_total = 0

    def _fill(self, n: int) -> None:
        while len(self._buf) < n:
            if self._budget.remaining_seconds() <= 0:
                raise Stop("time_cap", self._source, f"collection time cap ({self._budget.limits.seconds:g}s) reached")
            try:
                chunk = next(self._chunks, b"")
            except Exception as exc:
                if self._budget.remaining_seconds() <= 0:
                    raise Stop(
                        "time_cap", self._source, f"collection time cap ({self._budget.limits.seconds:g}s) reached"
                    ) from None
                raise Stop("stream_error", self._source, f"archive stream broke: {type(exc).__name__}") from None
            if not chunk:
                raise Stop("malformed_archive", self._source, "archive ends in the middle of a member")
            self.read_total += len(chunk)
            if self.read_total > self._cap:
                raise Stop("byte_cap", self._source, "archive is larger than what is left of the byte cap")
            self._buf += chunk

    def read(self, n: int) -> bytes:
        """Exactly n bytes."""
        self._fill(n)
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out

    def stream(self, n: int) -> Iterator[bytes]:
        """n bytes in pieces, so a large member never sits in memory whole."""
        while n > 0:
            piece = self.read(min(n, CHUNK))
            n -= len(piece)
            yield piece


def _padded(size: int) -> int:
    return -size % BLOCK


class _Extractor:
    def __init__(self, budget: Budget, raw: _Raw, root: int, base: PurePosixPath, top: str | None) -> None:
        self.budget = budget
        self.raw = raw
        self.root = root
        self.base = base
        self.top = top
        self.too_deep: set[tuple[str, ...]] = set()
        # The regular files this archive wrote whole, by their parts: a hard link to one of them is that file again.
        self.written: dict[tuple[str, ...], int] = {}

    def where(self, name: str) -> str:
        # Plain concatenation: an absolute or `..` name is shown as the archive gave it, not resolved.
        return f"{str(self.base).rstrip('/')}/{name}" if name else str(self.base)

    def run(self) -> None:
        pax: dict[str, str] = {}
        long_name: str | None = None
        while True:
            buf = self.raw.read(BLOCK)
            if buf == bytes(BLOCK):
                return  # end-of-archive marker; what follows is padding
            try:
                info = tarfile.TarInfo.frombuf(buf, "utf-8", "surrogateescape")
            except tarfile.HeaderError as exc:
                raise Stop("malformed_archive", self.where(""), f"bad tar header: {exc}") from None
            if info.type in (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK):
                data = self._header_data(info)
                if info.type == tarfile.XHDTYPE:
                    pax = _parse_pax(data, self.where(info.name))
                elif info.type == tarfile.GNUTYPE_LONGNAME:
                    long_name = data.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")
                continue
            name = pax.get("path", long_name if long_name is not None else info.name)
            size = int(pax["size"]) if "size" in pax and pax["size"].isdigit() else info.size
            link = pax.get("linkpath", info.linkname)
            pax, long_name = {}, None
            if self.top is not None and (name in ("", "/") or name.startswith("/")):
                name = self.top + (name if name != "" else "/")
            self.member(info, name, size, link)

    def _header_data(self, info: tarfile.TarInfo) -> bytes:
        if info.size > MAX_HEADER_DATA:
            raise Stop("malformed_archive", self.where(info.name), f"tar extension header of {info.size} bytes")
        data = self.raw.read(info.size + _padded(info.size))
        return data[: info.size]

    def member(self, info: tarfile.TarInfo, name: str, size: int, link: str) -> None:
        budget = self.budget
        where = self.where(name.rstrip("/"))
        if budget.files >= budget.limits.max_files:
            raise Stop("file_cap", where, f"file count cap ({budget.limits.max_files}) reached; the rest not copied")
        budget.files += 1
        parts = _safe_parts(name)
        data_len = size + _padded(size) if info.type not in (tarfile.DIRTYPE, *_SKIPPED) else 0
        if parts is None:
            budget.note(Finding("unsafe_name", where, "absolute name or `..` in the archive; not copied"))
            self._skip(data_len, where)
        elif len(parts) > MAX_TREE_DEPTH:
            # One finding for the folder past the cap, not one per member below it.
            if parts[: MAX_TREE_DEPTH + 1] not in self.too_deep:
                self.too_deep.add(parts[: MAX_TREE_DEPTH + 1])
                budget.note(Finding("too_deep", where[:500], f"more than {MAX_TREE_DEPTH} folders deep; not copied"))
            self._skip(data_len, where)
        elif info.type == tarfile.LNKTYPE and parts and (linked := self._written_target(link)) is not None:
            # The engine archives a file with two names once, and the second name as a link to the first: an honest
            # harness's rollout.json that it also linked as a backup would otherwise be lost under its own name.
            self._copy_written(linked, parts, where)
        elif info.type in _SKIPPED:
            kind, why = _SKIPPED[info.type]
            target = f" (to {link[:200]!r})" if link else ""
            budget.note(Finding(kind, where, f"{why}{target}"))
        elif info.type == tarfile.DIRTYPE:
            if parts:
                self._dir(parts, where)
        elif info.type in _REGULAR and not parts:
            budget.note(Finding("unsafe_name", where, "a file with an empty name; not copied"))
            self._skip(data_len, where)
        elif info.type in _REGULAR:
            if size > budget.limits.max_bytes - budget.copied:
                # Reading past it would cost as much as copying it (a sparse 100 GiB file costs the harness
                # nothing to make): stop this archive here.
                left = budget.limits.max_bytes - budget.copied
                budget.note(Finding("over_cap_file", where, f"{size} bytes, {left} left of the byte cap; not copied"))
                raise Stop("byte_cap", where, "archive not read past an over-cap file; later members not copied")
            self._file(parts, size, where)
        else:
            budget.note(Finding("special", where, f"tar member type {info.type!r} is not a file or folder"))
            self._skip(data_len, where)

    def _skip(self, n: int, where: str) -> None:
        for _ in self.raw.stream(n):
            pass

    def _parent(self, parts: tuple[str, ...], where: str) -> int | None:
        """An fd of the folder holding parts[-1], made as needed; None if something not ours is in the way."""
        fd = os.dup(self.root)
        try:
            for part in parts[:-1]:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
                nxt = os.open(part, O_DIR, dir_fd=fd)
                os.close(fd)
                fd = nxt
        except OSError as exc:
            os.close(fd)
            self.budget.note(Finding("conflict", where, f"its folder cannot be made: {exc.strerror}"))
            return None
        return fd

    def _dir(self, parts: tuple[str, ...], where: str) -> None:
        fd = self._parent(parts, where)
        if fd is None:
            return
        try:
            os.mkdir(parts[-1], 0o755, dir_fd=fd)
        except FileExistsError:
            st = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
            if not stat.S_ISDIR(st.st_mode):
                self.budget.note(Finding("conflict", where, "a folder where a file was already collected"))
        finally:
            os.close(fd)

    def _file(self, parts: tuple[str, ...], size: int, where: str) -> None:
        data_len = size + _padded(size)
        fd = self._parent(parts, where)
        if fd is None:
            self._skip(data_len, where)
            return
        try:
            out = os.open(parts[-1], O_NEW, 0o644, dir_fd=fd)
        except OSError as exc:
            self.budget.note(Finding("duplicate", where, f"not written over what was collected: {exc.strerror}"))
            self._skip(data_len, where)
            return
        finally:
            os.close(fd)
        try:
            for piece in self.raw.stream(size):
                os.write(out, piece)  # regular file on our own disk: short writes only on a full disk (raises)
                self.budget.copied += len(piece)
        finally:
            os.close(out)
        self.raw.read(_padded(size))
        self.written[parts] = size

    def _written_target(self, link: str) -> tuple[str, ...] | None:
        if self.top is not None and (link in ("", "/") or link.startswith("/")):
            link = self.top + (link if link != "" else "/")
        parts = _safe_parts(link)
        return parts if parts is not None and parts in self.written else None

    def _copy_written(self, target: tuple[str, ...], parts: tuple[str, ...], where: str) -> None:
        """A hard link to a file this archive wrote: that file's bytes again under the link's name, counted as a copy
        of them is (a file, its bytes), and read back from our own folder without following a link."""
        budget = self.budget
        size = self.written[target]
        if size > budget.limits.max_bytes - budget.copied:
            left = budget.limits.max_bytes - budget.copied
            budget.note(Finding("over_cap_file", where, f"{size} bytes, {left} left of the byte cap; not copied"))
            return
        src = self._parent(target, where)
        if src is None:
            return
        try:
            source = os.open(target[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=src)
        except OSError as exc:
            budget.note(Finding("hardlink", where, f"its target could not be read again: {exc.strerror}"))
            return
        finally:
            os.close(src)
        try:
            fd = self._parent(parts, where)
            if fd is None:
                return
            try:
                out = os.open(parts[-1], O_NEW, 0o644, dir_fd=fd)
            except OSError as exc:
                budget.note(Finding("duplicate", where, f"not written over what was collected: {exc.strerror}"))
                return
            finally:
                os.close(fd)
            try:
                while budget.copied < budget.limits.max_bytes and (piece := os.read(source, CHUNK)):
                    os.write(out, piece[: budget.limits.max_bytes - budget.copied])
                    budget.copied += min(len(piece), budget.limits.max_bytes - budget.copied)
            finally:
                os.close(out)
            self.written[parts] = size
        finally:
            os.close(source)


def _safe_parts(name: str) -> tuple[str, ...] | None:
    """The name's components below the destination, or None for an absolute name or one with `..`."""
    if name.startswith("/") or "\0" in name:
        return None
    parts = tuple(p for p in name.split("/") if p not in ("", "."))
    if ".." in parts:
        return None
    return parts


def _parse_pax(data: bytes, where: str) -> dict[str, str]:
    """`<len> <key>=<value>\\n` records (POSIX.1-2001); only path, linkpath and size are used."""
    out: dict[str, str] = {}
    pos = 0
    while pos < len(data):
        space = data.find(b" ", pos)
        try:
            length = int(data[pos:space]) if space > pos else 0
        except ValueError:
            length = 0
        if length <= 0 or pos + length > len(data):
            raise Stop("malformed_archive", where, "bad pax extended header record")
        key, sep, value = data[space + 1 : pos + length - 1].partition(b"=")
        if not sep:
            raise Stop("malformed_archive", where, "bad pax extended header record")
        out[key.decode("utf-8", "surrogateescape")] = value.decode("utf-8", "surrogateescape")
        pos += length
    return out
