"""Bounded, link-safe collection: a container's tar stream and log stream to disk, under one episode's caps."""

from __future__ import annotations

import contextlib
import os
import stat
import tarfile
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

__all__ = ["CollectLimits", "Collection", "Finding"]

BLOCK = 512
MAX_FINDINGS = 200  # a harness that plants a million links gets one line saying how many were left off
MAX_HEADER_DATA = 64 * 1024  # pax and GNU long-name records: real ones are a few hundred bytes
_CHUNK = 64 * 1024
_O_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_O_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
# The folder a copy starts from (and the one it lands in) is named by the caller and may be reached by a link.
_O_PARENT = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC

_REGULAR = {tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.CONTTYPE}
_SKIPPED = {
    tarfile.SYMTYPE: ("symlink", "symbolic links are not followed or copied"),
    tarfile.LNKTYPE: ("hardlink", "hard links are not copied"),
    tarfile.FIFOTYPE: ("fifo", "named pipes are not copied"),
    tarfile.CHRTYPE: ("device", "character devices are not copied"),
    tarfile.BLKTYPE: ("device", "block devices are not copied"),
}


@dataclass(frozen=True)
class CollectLimits:
    """Per-episode caps on everything copied out of the containers (native logs, markers, witness, logs)."""

    max_bytes: int = 256 * 1024 * 1024
    max_files: int = 20_000
    seconds: float = 60.0

    def to_json(self) -> dict[str, Any]:
        return {"max_bytes": self.max_bytes, "max_files": self.max_files, "seconds": self.seconds}


@dataclass(frozen=True)
class Finding:
    """Something the harness left that was not copied: what it was, where, and why."""

    kind: str
    path: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "path": self.path, "reason": self.reason}


class _Stop(Exception):
    """The rest of this archive is not read (a cap was reached or the stream is unusable)."""

    def __init__(self, kind: str, path: str, reason: str) -> None:
        super().__init__(reason)
        self.finding = Finding(kind, path, reason)


@dataclass
class Collection:
    """One episode's collection budget; every copy-out draws on it and records its findings here."""

    limits: CollectLimits = field(default_factory=CollectLimits)
    clock: Callable[[], float] = time.monotonic
    copied: int = 0
    files: int = 0
    findings: list[Finding] = field(default_factory=list)
    findings_dropped: int = 0
    _started: float = field(default=0.0, init=False)

    def __post_init__(self) -> None:
        self._started = self.clock()

    def remaining_seconds(self) -> float:
        return self.limits.seconds - (self.clock() - self._started)

    def note(self, finding: Finding) -> None:
        if len(self.findings) < MAX_FINDINGS:
            self.findings.append(finding)
        else:
            self.findings_dropped += 1

    def to_json(self) -> dict[str, Any]:
        return {
            "limits": self.limits.to_json(),
            "bytes": self.copied,
            "files": self.files,
            "seconds": round(min(self.clock() - self._started, 1e9), 3),
            "findings": [f.to_json() for f in self.findings],
            "findings_dropped": self.findings_dropped,
        }

    def extract(self, chunks: Iterable[bytes], dest: Path, source: str, rooted_names: bool = False) -> None:
        """Unpack a tar stream below `dest`: regular files and folders only, created by us, never through a link.

        `rooted_names`: the engine names the archived folder itself '' and its members `/member` (Podman 4.3 for
        a volume's mount point); they are read as `<folder>/member`, as Docker names them. Only the engine makes
        these names (a file name cannot hold '/'), so this opens no way out of `dest`.
        """
        dest.mkdir(parents=True, exist_ok=True)
        base = PurePosixPath(source).parent
        raw = _Raw(iter(chunks), self, source)
        root = os.open(dest, _O_DIR)
        top = PurePosixPath(source).name if rooted_names else None
        try:
            _Extractor(self, raw, root, base, top).run()
        except _Stop as stop:
            self.note(stop.finding)
        finally:
            os.close(root)

    def copy_tree(self, src: Path, dest: Path, where: str) -> None:
        """Copy a saved file or folder as extract() would: regular files and folders only, never through a link.

        Below src and dest every entry is reached by name from its folder's descriptor (O_NOFOLLOW): no path is
        resolved again per file (a folder may hold 100,000), and a folder swapped for a link is not entered.
        """
        try:
            folder = os.open(src.parent, _O_PARENT)
        except FileNotFoundError:
            return
        try:
            self._copy_node(folder, src.name, dest.parent, dest.name, where)
        except _Stop as stop:
            self.note(stop.finding)
        finally:
            os.close(folder)

    def _copy_node(self, folder: int, name: str, into: int | Path, dest_name: str, where: str) -> None:
        try:
            st = os.stat(name, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            return
        if self.remaining_seconds() <= 0:
            raise _Stop("time_cap", where, f"collection time cap ({self.limits.seconds:g}s) reached")
        if self.files >= self.limits.max_files:
            raise _Stop("file_cap", where, f"file count cap ({self.limits.max_files}) reached; the rest not copied")
        self.files += 1
        mode = st.st_mode
        if stat.S_ISDIR(mode):
            with _folder(into) as dest:
                os.mkdir(dest_name, dir_fd=dest)
                try:
                    src_dir = os.open(name, _O_DIR, dir_fd=folder)
                except OSError as exc:
                    self.note(Finding("special", where, f"cannot be opened as a folder without a link: {exc.strerror}"))
                    return
                try:
                    dest_dir = os.open(dest_name, _O_DIR, dir_fd=dest)
                    try:
                        for child in sorted(os.listdir(src_dir)):
                            self._copy_node(src_dir, child, dest_dir, child, f"{where}/{child}")
                    finally:
                        os.close(dest_dir)
                finally:
                    os.close(src_dir)
        elif stat.S_ISREG(mode):
            if st.st_size > self.limits.max_bytes - self.copied:
                left = self.limits.max_bytes - self.copied
                self.note(
                    Finding("over_cap_file", where, f"{st.st_size} bytes, {left} left of the byte cap; not copied")
                )
                return
            self._copy_file(folder, name, into, dest_name, where)
        else:
            kind = {stat.S_IFLNK: "symlink", stat.S_IFIFO: "fifo", stat.S_IFCHR: "device", stat.S_IFBLK: "device"}
            what = kind.get(stat.S_IFMT(mode), "special")
            target = f" (to {os.readlink(name, dir_fd=folder)[:200]!r})" if what == "symlink" else ""
            self.note(Finding(what, where, f"not a file or folder; not followed or copied{target}"))

    def _copy_file(self, folder: int, name: str, into: int | Path, dest_name: str, where: str) -> None:
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
        except OSError as exc:
            self.note(Finding("special", where, f"cannot be opened without following a link: {exc.strerror}"))
            return
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                self.note(Finding("special", where, "changed into something other than a file while copied"))
                return
            with _folder(into) as dest:
                out = os.open(dest_name, _O_NEW, 0o644, dir_fd=dest)
            try:
                left = self.limits.max_bytes - self.copied
                while piece := os.read(fd, min(_CHUNK, left + 1)):
                    if len(piece) > left:
                        self.note(Finding("over_cap_file", where, "grew past the byte cap while copied; cut"))
                        break
                    os.write(out, piece)
                    self.copied += len(piece)
                    left -= len(piece)
            finally:
                os.close(out)
        finally:
            os.close(fd)

    def save_log(self, chunks: Iterable[bytes], dest: Path, share: float = 0.125) -> None:
        """Write a log stream keeping its head and its tail (at most `share` of the byte cap), marking any cut."""
        cap = max(BLOCK, int(self.limits.max_bytes * share))
        cap = min(cap, max(0, self.limits.max_bytes - self.copied))
        half = cap // 2
        head = bytearray()
        tail: deque[bytes] = deque()
        tail_len = 0
        total = 0
        why = None
        try:
            for chunk in chunks:
                total += len(chunk)
                room = half - len(head)
                if room > 0:
                    head += chunk[:room]
                    chunk = chunk[room:]
                if chunk:
                    tail.append(chunk)
                    tail_len += len(chunk)
                    while tail and tail_len - len(tail[0]) >= cap - half:
                        tail_len -= len(tail.popleft())
                if self.remaining_seconds() <= 0:
                    why = f"the collection time cap ({self.limits.seconds:g}s) was reached while reading the log"
                    break
        except Exception as exc:  # a broken log stream is a finding about this log, not an episode error
            why = f"the log stream broke: {type(exc).__name__}: {exc}"
        body = b"".join(tail)[-(cap - half) :] if cap - half > 0 else b""
        cut = total - len(head) - len(body)
        with open(dest, "xb") as f:
            f.write(head)
            if cut > 0:
                f.write(f"\n[harness-probe: {cut} bytes cut here; log cap {cap} bytes]\n".encode())
                self.note(Finding("log_cut", dest.name, f"{total} bytes logged, the middle {cut} bytes were cut"))
            f.write(body)
        if why:
            self.note(Finding("log_incomplete", dest.name, why))
        self.copied += len(head) + len(body)


@contextlib.contextmanager
def _folder(where: int | Path) -> Iterator[int]:
    """A folder's descriptor: one already open (kept open), or the named folder opened for the moment."""
    if isinstance(where, int):
        yield where
        return
    fd = os.open(where, _O_PARENT)
    try:
        yield fd
    finally:
        os.close(fd)


class _Raw:
    """The engine's byte stream, read in order, never past this archive's share of the caps or the deadline."""

    def __init__(self, chunks: Iterator[bytes], budget: Collection, source: str) -> None:
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
                raise _Stop("time_cap", self._source, f"collection time cap ({self._budget.limits.seconds:g}s) reached")
            try:
                chunk = next(self._chunks, b"")
            except Exception as exc:
                if self._budget.remaining_seconds() <= 0:
                    raise _Stop(
                        "time_cap", self._source, f"collection time cap ({self._budget.limits.seconds:g}s) reached"
                    ) from None
                raise _Stop("stream_error", self._source, f"archive stream broke: {type(exc).__name__}") from None
            if not chunk:
                raise _Stop("malformed_archive", self._source, "archive ends in the middle of a member")
            self.read_total += len(chunk)
            if self.read_total > self._cap:
                raise _Stop("byte_cap", self._source, "archive is larger than what is left of the byte cap")
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
            piece = self.read(min(n, _CHUNK))
            n -= len(piece)
            yield piece


def _padded(size: int) -> int:
    return -size % BLOCK


class _Extractor:
    def __init__(self, budget: Collection, raw: _Raw, root: int, base: PurePosixPath, top: str | None) -> None:
        self.budget = budget
        self.raw = raw
        self.root = root
        self.base = base
        self.top = top

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
                raise _Stop("malformed_archive", self.where(""), f"bad tar header: {exc}") from None
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
            raise _Stop("malformed_archive", self.where(info.name), f"tar extension header of {info.size} bytes")
        data = self.raw.read(info.size + _padded(info.size))
        return data[: info.size]

    def member(self, info: tarfile.TarInfo, name: str, size: int, link: str) -> None:
        budget = self.budget
        where = self.where(name.rstrip("/"))
        if budget.files >= budget.limits.max_files:
            raise _Stop("file_cap", where, f"file count cap ({budget.limits.max_files}) reached; the rest not copied")
        budget.files += 1
        parts = _safe_parts(name)
        data_len = size + _padded(size) if info.type not in (tarfile.DIRTYPE, *_SKIPPED) else 0
        if parts is None:
            budget.note(Finding("unsafe_name", where, "absolute name or `..` in the archive; not copied"))
            self._skip(data_len, where)
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
                raise _Stop("byte_cap", where, "archive not read past an over-cap file; later members not copied")
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
                nxt = os.open(part, _O_DIR, dir_fd=fd)
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
            out = os.open(parts[-1], _O_NEW, 0o644, dir_fd=fd)
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
            raise _Stop("malformed_archive", where, "bad pax extended header record")
        key, sep, value = data[space + 1 : pos + length - 1].partition(b"=")
        if not sep:
            raise _Stop("malformed_archive", where, "bad pax extended header record")
        out[key.decode("utf-8", "surrogateescape")] = value.decode("utf-8", "surrogateescape")
        pos += length
    return out
