"""`--harness-source PATH`: a local image folder, npm tarball or folder, wheel or Python project, as build inputs."""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import subprocess
import tarfile
import tempfile
from pathlib import Path

from orchestrator.treehash import walk
from orchestrator.variants.packages import Package

__all__ = ["SOURCE_DIR", "SourceError", "image_folder_files", "npm_tarball", "python_files", "source_sha256"]

SOURCE_DIR = "harness-source"
MAX_SOURCE_BYTES = 512 * 1024 * 1024
# Never part of what a checkout installs: version control, caches, environments built beside it.
_SKIP = frozenset({".git", ".hg", "__pycache__", ".venv", "venv", "node_modules", ".mypy_cache", ".pytest_cache"})
_SKIP |= {".ruff_cache", ".tox", ".nox", "dist", "build"}


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


def _exists(path: Path) -> None:
    if not path.exists():
        raise SourceError(f"harness source {path} does not exist")


def image_folder_files(path: Path, image: str) -> dict[str, bytes]:
    """An image folder given whole (a copy of images/IMAGE, edited): its Dockerfile and everything beside it."""
    _exists(path)
    if not (path.is_dir() and (path / "Dockerfile").is_file()):
        raise SourceError(
            f"harness source {path} is no image folder: the {image} harness is built from its folder "
            f"(a Dockerfile beside its code, like images/{image}); give a copy of that folder"
        )
    return _read_tree(path)


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _tarball_name(path: Path) -> str:
    try:
        with tarfile.open(path, "r:*") as tar:
            member = tar.extractfile("package/package.json")
            meta = json.loads(member.read(1 << 20)) if member is not None else None
    except (tarfile.TarError, KeyError, OSError, ValueError) as exc:
        raise SourceError(f"harness source {path} is no npm package tarball (package/package.json): {exc}") from None
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(name, str):
        raise SourceError(f"harness source {path}: package/package.json names no package")
    return name


def npm_tarball(path: Path, pkg: Package) -> bytes:
    """The npm tarball to install: the file itself, or `npm pack` of a package folder (its scripts not run)."""
    _exists(path)
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
    name = _tarball_name(path)
    if name != pkg.name:
        raise SourceError(f"harness source {shown} is the npm package {name!r}, not {pkg.name!r}")
    return path.read_bytes()


def python_files(path: Path, pkg: Package) -> tuple[str, dict[str, bytes]]:
    """(what pip installs, context files): a wheel of pkg, or a project folder (pyproject.toml or setup.py)."""
    _exists(path)
    if path.is_file():
        if path.suffix != ".whl":
            raise SourceError(f"harness source {path} is no wheel (.whl) and no project folder")
        dist = path.name.split("-", 1)[0]
        if _normal(dist) != _normal(pkg.name):
            raise SourceError(f"harness source {path} is a wheel of {dist!r}, not of {pkg.name!r}")
        return f"{SOURCE_DIR}/{path.name}", {f"{SOURCE_DIR}/{path.name}": path.read_bytes()}
    if not ((path / "pyproject.toml").is_file() or (path / "setup.py").is_file()):
        raise SourceError(f"harness source {path} holds no pyproject.toml or setup.py: nothing pip can install")
    files = {f"{SOURCE_DIR}/project/{rel}": data for rel, data in _read_tree(path).items()}
    return f"{SOURCE_DIR}/project", files
