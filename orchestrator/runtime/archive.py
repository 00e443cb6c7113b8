"""Image archives between runtimes: `docker save` format streamed to a file or from one engine into another.

Apptainer builds its SIF files from these archives (`docker-archive://`), a cluster user copies them from a
machine that has an engine, and Podman imports Docker's images this way. The archive keeps the image id, so the
content-hash tags (which include the parent's id) stay the same on every runtime.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import docker

__all__ = ["ArchiveInfo", "export_image", "transfer_image"]

CHUNK = 1 << 20


@dataclass(frozen=True)
class ArchiveInfo:
    tag: str
    path: Path
    bytes: int
    sha256: str


def _chunks(client: docker.DockerClient, tag: str) -> Iterator[bytes]:
    # The low-level call streams; `Image.save()` would too, but it resolves the image first by a second call.
    yield from client.api.get_image(tag, chunk_size=CHUNK)


def export_image(client: docker.DockerClient, tag: str, dest: Path) -> ArchiveInfo:
    """Write `tag` as a docker-archive tar at `dest`, atomically (a half-written archive is never left there)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.part")
    h = hashlib.sha256()
    size = 0
    try:
        with tmp.open("wb") as f:
            for chunk in _chunks(client, tag):
                f.write(chunk)
                h.update(chunk)
                size += len(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return ArchiveInfo(tag, dest, size, h.hexdigest())


def transfer_image(source: docker.DockerClient, target: docker.DockerClient, tag: str) -> str:
    """Copy `tag` from one engine to another without holding the archive in memory; returns the target's id."""
    target.api.load_image(_chunks(source, tag), quiet=True)  # type: ignore[no-untyped-call]
    return str(target.images.get(tag).id)
