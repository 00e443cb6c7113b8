"""A published run's evidence: every episode of one harness packed into one reproducible, size-capped .tar.gz."""

from __future__ import annotations

import gzip
import io
import os
import shutil
import stat
import tarfile
from pathlib import Path
from typing import Protocol

__all__ = ["ARCHIVE", "MAX_ARCHIVE_BYTES", "MAX_UNPACKED_BYTES", "EvidenceError", "pack_evidence", "unpack_evidence"]

ARCHIVE = "evidence.tar.gz"
# docs/results/ is committed: one harness's evidence may take this much, compressed (tests hold the whole folder
# to a budget too, tests/unit/report/test_published.py).
MAX_ARCHIVE_BYTES = 6 * 1024 * 1024
# What unpacking may write: a published archive is repository content anyone could have edited.
MAX_UNPACKED_BYTES = 512 * 1024 * 1024
MAX_MEMBERS = 50_000


class EvidenceError(ValueError):
    """An archive that cannot be written within its budget, or read back as the plain tree it must be."""


def _files(root: Path) -> list[str]:
    """Every regular file below `root` as a relative POSIX path, and every empty folder with a trailing slash,
    sorted; links and special files are not evidence. An empty folder is: a harness that made its session folder
    and wrote nothing in it is normalized (and named) otherwise than one that made none."""
    found: list[str] = []
    for top, dirs, files in os.walk(root, followlinks=False):
        dirs.sort()
        if not dirs and not files and top != str(root):
            found.append(Path(os.path.relpath(top, root)).as_posix() + "/")
        for name in sorted(files):
            path = os.path.join(top, name)
            if stat.S_ISREG(os.lstat(path).st_mode):
                found.append(Path(os.path.relpath(path, root)).as_posix())
    return found


def pack_evidence(run_dir: Path, harness: str) -> bytes:
    """`<harness>/<scenario>/...` of every episode of `harness` in `run_dir`, as the bytes of a .tar.gz.

    Byte-reproducible: sorted names, no owners, times or modes beyond 0644, gzip without a timestamp. Each file
    is read once into memory, so a file cannot change between its size and its bytes."""
    buf = io.BytesIO()
    with (
        gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, compresslevel=9) as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        base = run_dir / harness
        for scenario in sorted(p.name for p in base.iterdir() if p.is_dir() and not p.is_symlink()):
            for rel in _files(base / scenario):
                if rel.endswith("/"):
                    folder = tarfile.TarInfo(f"{harness}/{scenario}/{rel.rstrip('/')}")
                    folder.type, folder.mode, folder.mtime = tarfile.DIRTYPE, 0o755, 0
                    tar.addfile(folder)
                    continue
                flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
                fd = os.open(base / scenario / rel, flags)
                with os.fdopen(fd, "rb") as f:
                    data = f.read()
                info = tarfile.TarInfo(f"{harness}/{scenario}/{rel}")
                info.size, info.mode, info.mtime = len(data), 0o644, 0
                tar.addfile(info, io.BytesIO(data))
                if buf.tell() > MAX_ARCHIVE_BYTES:
                    raise EvidenceError(f"{harness}'s evidence is over its {MAX_ARCHIVE_BYTES:,}-byte budget")
    size = buf.tell()
    if size > MAX_ARCHIVE_BYTES:
        raise EvidenceError(f"{harness}'s evidence is {size:,} bytes, over its {MAX_ARCHIVE_BYTES:,}-byte budget")
    return buf.getvalue()


def _plain_parts(name: str) -> list[str]:
    parts = name.split("/")
    if name.startswith("/") or any(p in ("", ".", "..") or "\\" in p or "\0" in p for p in parts):
        raise EvidenceError(f"archive member {name!r} is not a plain relative path")
    return parts


def unpack_evidence(archive: Path, dest: Path) -> int:
    """Write the archive's regular files below `dest` (which must not exist): no links, no names leaving it, within
    the caps; anything else is an EvidenceError. Returns the number of files."""
    dest.mkdir(parents=True)
    written, count = 0, 0
    # Read as a stream through a cap on what the gzip gives: tarfile holds a pax header whole in memory before any
    # member's size is known, and a 7 MB archive can hold a header of a gigabyte.
    with gzip.open(archive) as unzipped, tarfile.open(fileobj=_Capped(unzipped, archive), mode="r|") as tar:
        for member in tar:
            parts = _plain_parts(member.name)
            if not member.isfile() and not member.isdir():
                raise EvidenceError(f"archive member {member.name!r} is not a regular file")
            count += 1
            written += member.size
            if count > MAX_MEMBERS or written > MAX_UNPACKED_BYTES:
                raise EvidenceError(
                    f"{archive} unpacks past its caps ({MAX_MEMBERS:,} files, {MAX_UNPACKED_BYTES:,} bytes)"
                )
            folder = dest
            for part in parts if member.isdir() else parts[:-1]:
                folder = folder / part
                try:
                    folder.mkdir()
                except FileExistsError:
                    if not stat.S_ISDIR(os.lstat(folder).st_mode):
                        raise EvidenceError(f"archive member {member.name!r} passes through a file") from None
            if member.isdir():
                continue  # an empty folder of the evidence: made above
            src = tar.extractfile(member)
            assert src is not None  # a regular file's member always has its bytes
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
            try:
                fd = os.open(folder / parts[-1], flags, 0o644)
            except FileExistsError:
                raise EvidenceError(f"archive member {member.name!r} appears twice") from None
            with os.fdopen(fd, "wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)  # a piece at a time: a member may be hundreds of MB
    return count


class _Reader(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class _Capped(io.RawIOBase):
    """A file's reads, refused past what the caps allow a whole archive to unpack to (its members' bytes, and a
    header block or three for each)."""

    LIMIT = MAX_UNPACKED_BYTES + MAX_MEMBERS * 3 * tarfile.BLOCKSIZE

    def __init__(self, raw: _Reader, archive: Path) -> None:
        super().__init__()
        self.raw, self.archive, self.read_so_far = raw, archive, 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        chunk = self.raw.read(size if 0 <= size <= self.LIMIT else self.LIMIT + 1)
        self.read_so_far += len(chunk)
        if self.read_so_far > self.LIMIT:
            raise EvidenceError(f"{self.archive} unpacks past {self.LIMIT:,} bytes (its caps, headers included)")
        return chunk
