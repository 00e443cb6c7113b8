"""`--harness-source PATH`: a local image folder, npm tarball or folder, wheel or Python project, as build inputs."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import stat
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import IO, Any

from orchestrator.treehash import walk
from orchestrator.variants.packages import Package

__all__ = [
    "SOURCE_DIR",
    "SourceError",
    "image_folder_files",
    "npm_tarball",
    "python_files",
    "source_sha256",
    "source_stat",
]

SOURCE_DIR = "harness-source"
MAX_SOURCE_BYTES = 512 * 1024 * 1024
# Never part of what a checkout installs: version control, caches, environments built beside it.
_SKIP = frozenset({".git", ".hg", "__pycache__", ".venv", "venv", "node_modules", ".mypy_cache", ".pytest_cache"})
_SKIP |= {".ruff_cache", ".tox", ".nox", "dist", "build"}
_KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device"}
_KINDS[stat.S_IFSOCK] = "a socket"
# PEP 427 `{distribution}-{version}(-{build})?-{python}-{abi}-{platform}.whl`. The name is pasted into the RUN line
# that installs it (quoted there too), so nothing past what a wheel name may hold gets that far.
_WHEEL = re.compile(
    r"(?P<dist>[A-Za-z0-9][A-Za-z0-9_.]*)-[A-Za-z0-9_.+!]+(?:-[0-9][A-Za-z0-9_.]*)?(?:-[A-Za-z0-9_.]+){3}\.whl"
)


class SourceError(ValueError):
    """A --harness-source that is missing, or holds nothing the harness's install method can install."""


def _included(rel: str) -> bool:
    return not (set(rel.split("/")[:-1]) & _SKIP) and not rel.endswith(".pyc")


def _tree(root: Path, refuse_links: bool) -> list[tuple[str, str]]:
    # The project's link-free walk: a link or device below the source is named, never followed or read.
    entries = [(rel, digest) for rel, digest in walk(root) if _included(rel)]
    odd = [rel for rel, digest in entries if digest.startswith("not-a-file:")]
    if odd and refuse_links:
        raise SourceError(f"{root} holds links or special files ({', '.join(odd[:5])}): only regular files are copied")
    return [(rel, digest) for rel, digest in entries if not digest.startswith("not-a-file:")]


def source_sha256(path: Path) -> str:
    """sha256 of a source file, or of a folder's `path=sha256` lines (link-free walk, caches and .git left out)."""
    if path.is_file():
        h = hashlib.sha256()
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        return h.hexdigest()
    lines = "".join(f"{rel}={digest}\n" for rel, digest in _tree(path, refuse_links=False))
    return hashlib.sha256(lines.encode()).hexdigest()


def _read_tree(root: Path) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    total = 0
    for rel, _ in _tree(root, refuse_links=True):
        fd = os.open(root / rel, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise SourceError(f"{root / rel} is not a regular file")
            data = f.read(MAX_SOURCE_BYTES + 1 - total)
        total += len(data)
        if total > MAX_SOURCE_BYTES:
            raise SourceError(f"{root} holds more than {MAX_SOURCE_BYTES // 2**20} MiB; not a harness source")
        files[rel] = data
    return files


def source_stat(path: Path, shown: str = "harness source") -> os.stat_result:
    """The source's status, a final link followed (as a folder's root is); SourceError when it cannot be had."""
    # Not Path.exists(): it answers False for a link loop or an unsearchable folder, hiding the reason.
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        raise SourceError(f"{shown} {path} does not exist") from None
    except OSError as exc:
        raise SourceError(f"{shown} {path} cannot be read: {exc.strerror}") from None


def _check_size(shown: Path, size: int) -> None:
    if size > MAX_SOURCE_BYTES:
        raise SourceError(f"harness source {shown} is {size} bytes, over the {MAX_SOURCE_BYTES} bytes a source may be")


def _regular(path: Path, shown: Path) -> None:
    # Judged before opening: opening a FIFO waits for a writer, and a device reads forever.
    status = source_stat(path)
    if not stat.S_ISREG(status.st_mode):
        kind = _KINDS.get(stat.S_IFMT(status.st_mode), f"a special file (mode {status.st_mode:o})")
        raise SourceError(f"harness source {shown} is {kind}: give a regular file or a folder")
    _check_size(shown, status.st_size)


def _read_regular(path: Path, shown: Path) -> bytes:
    _regular(path, shown)
    try:
        # Non-blocking: a file swapped for a FIFO since it was judged still opens at once, and fstat refuses it.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise SourceError(f"harness source {shown} was replaced by a special file while it was read")
            data = f.read(MAX_SOURCE_BYTES + 1)
    except OSError as exc:
        raise SourceError(f"harness source {shown} cannot be read: {exc.strerror}") from None
    _check_size(shown, len(data))
    return data


def image_folder_files(path: Path, image: str) -> dict[str, bytes]:
    """An image folder given whole (a copy of images/IMAGE, edited): its Dockerfile and everything beside it."""
    source_stat(path)
    if not (path.is_dir() and (path / "Dockerfile").is_file()):
        raise SourceError(
            f"harness source {path} is no image folder: the {image} harness is built from its folder "
            f"(a Dockerfile beside its code, like images/{image}); give a copy of that folder"
        )
    return _read_tree(path)


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


class _Capped:
    """A tarball's unpacked stream that refuses to be read or skipped past MAX_SOURCE_BYTES: a 2 MB .tgz unpacks to
    GiBs, skipped member by member (seconds a GiB) or, in a pax header, read into memory whole."""

    def __init__(self, raw: IO[bytes]) -> None:
        self._raw = raw

    def _check(self, end: int) -> None:
        if end > MAX_SOURCE_BYTES:
            raise SourceError(f"unpacks to more than {MAX_SOURCE_BYTES} bytes (reached {end})")

    def read(self, size: int = -1) -> bytes:
        at = self._raw.tell()
        # At most one byte past the cap is read: enough to tell a stream that goes on from one that ends there.
        room = MAX_SOURCE_BYTES + 1 - at
        data = self._raw.read(room if size < 0 or size > room else size)
        self._check(at + len(data))
        return data

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        if whence != os.SEEK_END:  # a seek forward unpacks all before its target, so the target is judged first
            self._check(offset if whence == os.SEEK_SET else self._raw.tell() + offset)
        at = self._raw.seek(offset, whence)
        self._check(at)
        return at

    def tell(self) -> int:
        return self._raw.tell()

    def write(self, data: bytes, /) -> int:  # part of the file type tarfile takes; a source is only read
        raise io.UnsupportedOperation("a harness source is read, never written")

    def close(self) -> None:
        self._raw.close()


class _CappedTar(tarfile.TarFile):
    # tarfile unpacks the stream itself (gzip, bz2, xz): its reads are capped where it hands that stream over.
    def __init__(self, name: Any = None, mode: Any = "r", fileobj: Any = None, **kwargs: Any) -> None:
        super().__init__(name, mode, None if fileobj is None else _Capped(fileobj), **kwargs)


def _tarball_name(data: bytes, shown: Path) -> str:
    # All members are scanned, as before: tarfile takes the last package/package.json (as npm's unpacking does) and
    # the scan to the end proves the archive whole before anything is built.
    try:
        with _CappedTar.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
            member = tar.extractfile("package/package.json")
            meta = json.loads(member.read(1 << 20)) if member is not None else None
    except SourceError as exc:
        raise SourceError(f"harness source {shown} {exc}") from None
    except (tarfile.TarError, KeyError, OSError, ValueError) as exc:
        raise SourceError(f"harness source {shown} is no npm package tarball (package/package.json): {exc}") from None
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(name, str):
        raise SourceError(f"harness source {shown}: package/package.json names no package")
    return name


def npm_tarball(path: Path, pkg: Package) -> bytes:
    """The npm tarball to install: the file itself, or `npm pack` of a package folder (its scripts not run)."""
    source_stat(path)
    if path.is_dir():
        if not (path / "package.json").is_file():
            raise SourceError(f"harness source {path} holds no package.json: nothing npm can install")
        with tempfile.TemporaryDirectory(prefix="hp-pack-") as tmp:
            argv = ["npm", "pack", "--ignore-scripts", "--json", "--pack-destination", tmp]
            proc = subprocess.run(argv, cwd=path, capture_output=True, text=True, timeout=300, check=False)
            packed = sorted(Path(tmp).glob("*.tgz"))
            if proc.returncode != 0 or len(packed) != 1:
                raise SourceError(f"npm pack {path} failed: {proc.stderr.strip()[-400:]}")
            return _checked_tarball(packed[0], pkg, shown=path)
    return _checked_tarball(path, pkg, shown=path)


def _checked_tarball(path: Path, pkg: Package, shown: Path) -> bytes:
    data = _read_regular(path, shown)  # read once: the bytes checked are the bytes installed
    name = _tarball_name(data, shown)
    if name != pkg.name:
        raise SourceError(f"harness source {shown} is the npm package {name!r}, not {pkg.name!r}")
    return data


def python_files(path: Path, pkg: Package) -> tuple[str, dict[str, bytes]]:
    """(what pip installs, context files): a wheel of pkg, or a project folder (pyproject.toml or setup.py)."""
    source_stat(path)
    if not path.is_dir():
        _regular(path, path)
        if path.suffix != ".whl":
            raise SourceError(f"harness source {path} is no wheel (.whl) and no project folder")
        wheel = _WHEEL.fullmatch(path.name)
        if wheel is None:
            raise SourceError(
                f"harness source {path.parent}: {path.name!r} is no wheel file name "
                "({distribution}-{version}(-{build})?-{python}-{abi}-{platform}.whl, letters, digits and _.+!)"
            )
        dist = wheel["dist"]
        if _normal(dist) != _normal(pkg.name):
            raise SourceError(f"harness source {path} is a wheel of {dist!r}, not of {pkg.name!r}")
        return f"{SOURCE_DIR}/{path.name}", {f"{SOURCE_DIR}/{path.name}": _read_regular(path, path)}
    if not ((path / "pyproject.toml").is_file() or (path / "setup.py").is_file()):
        raise SourceError(f"harness source {path} holds no pyproject.toml or setup.py: nothing pip can install")
    files = {f"{SOURCE_DIR}/project/{rel}": data for rel, data in _read_tree(path).items()}
    return f"{SOURCE_DIR}/project", files
