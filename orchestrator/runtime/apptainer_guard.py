"""What the Apptainer backend checks before it trusts a path or passes on an environment: a private work root, an
owned SIF cache, SIFs verified against the image id they were built for, and no host Apptainer settings.

Apptainer reads `APPTAINER_*` / `SINGULARITY_*` variables as flags (`APPTAINER_BIND`, `APPTAINER_BINDPATH`,
`APPTAINER_NO_MOUNT`, ...) and `APPTAINERENV_*` as the container's own environment: none of the host's may reach
the harness's `apptainer run`. A shared temp folder or cache another local user made could hold a swapped
witness or a planted proxy SIF: each is used only when this user owns it and nobody else may write to it.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "APPTAINER_PREFIXES",
    "CGROUPS_ENV",
    "UnsafePath",
    "child_environment",
    "private_folder",
    "record_sif",
    "verified_sif",
]

APPTAINER_PREFIXES = ("APPTAINER", "SINGULARITY")  # APPTAINER_*, APPTAINERENV_*, SINGULARITY_*, SINGULARITYENV_*
# Apptainer applies --memory/--cpus/--pids-limit through cgroups v2, which a rootless user has only where systemd
# delegates them; without, it refuses to start. So they are asked for only where the user says they hold.
CGROUPS_ENV = "HARNESS_PROBE_APPTAINER_CGROUPS"
_READ = 1 << 20


class UnsafePath(RuntimeError):
    """A work root, cache or SIF this user does not own alone (or a link): not used."""


def child_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment an `apptainer` child runs with: the host's, without a single Apptainer setting."""
    return {k: v for k, v in environ.items() if not k.upper().startswith(APPTAINER_PREFIXES)}


def _owned(st: os.stat_result, path: Path, others_may_read: bool) -> None:
    if st.st_uid != os.getuid():
        raise UnsafePath(f"{path} is owned by uid {st.st_uid}, not by this user ({os.getuid()}); not used")
    forbidden = 0o022 if others_may_read else 0o077
    if st.st_mode & forbidden:
        raise UnsafePath(f"{path} has mode {stat.S_IMODE(st.st_mode):o} (others may write to it); not used")


def private_folder(path: Path, others_may_read: bool = False) -> Path:
    """`path` as a folder this user alone owns (0700; 0755 at most if `others_may_read`), made so if absent.

    Never a link, never one another user made: a pod's work folder below it holds the witness the proxy writes.
    """
    try:
        os.mkdir(path, 0o755 if others_may_read else 0o700)
    except FileExistsError:
        pass
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        os.mkdir(path, 0o755 if others_may_read else 0o700)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafePath(f"{path} is not a folder (a link or a file); not used")
    _owned(st, path, others_may_read)
    return path


def _digest(path: Path) -> tuple[str, os.stat_result]:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafePath(f"{path} is not a regular file; not used")
        _owned(st, path, True)
        h = hashlib.sha256()
        while piece := os.read(fd, _READ):
            h.update(piece)
        return h.hexdigest(), st
    finally:
        os.close(fd)


def _record_path(sif: Path) -> Path:
    return sif.with_name(sif.name + ".json")


def record_sif(sif: Path, entry: Mapping[str, Any]) -> None:
    """Beside a SIF just built: the image id and archive digest it was built from, and its own digest."""
    digest, _ = _digest(sif)
    record = {"tag": entry["tag"], "image_id": entry["image_id"], "archive_sha256": entry["sha256"], "sha256": digest}
    tmp = sif.with_name(f".{sif.name}.json.part")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "w") as f:
        json.dump(record, f, sort_keys=True)
    os.replace(tmp, _record_path(sif))


def verified_sif(sif: Path, entry: Mapping[str, Any]) -> bool:
    """Whether the cached SIF was built by this user from this very image (its id and archive digest as the image
    archives record them now) and is byte for byte what was built; False: build it again. A file name proves
    nothing: anyone who can write to the cache could have put a forged proxy there."""
    record_path = _record_path(sif)
    try:
        raw, _ = _read_small(record_path)
        record = json.loads(raw)
        digest, _ = _digest(sif)
    except (OSError, ValueError, UnsafePath):
        return False
    if not isinstance(record, dict):
        return False
    wanted = {"tag": entry["tag"], "image_id": entry["image_id"], "archive_sha256": entry["sha256"], "sha256": digest}
    return all(record.get(k) == v for k, v in wanted.items())


def _read_small(path: Path) -> tuple[bytes, os.stat_result]:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > 64 * 1024:
            raise UnsafePath(f"{path} is not a small regular file")
        _owned(st, path, True)
        return os.read(fd, 64 * 1024), st
    finally:
        os.close(fd)
