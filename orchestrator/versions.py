"""Version probes: an image's own version string, asked in a hardened container once per image content.

An image id names the image's content, so the same command in the same image answers the same: the answer is
remembered under ~/.cache/harness-probe/versions/ and later runs spend no container start on it. Only clean
answers (exit 0, some output) are remembered; a cache file that is not exactly ours is ignored and asked anew.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from pathlib import Path

import structlog

from orchestrator.evidence import FormatError, validate
from orchestrator.evidence.jsonread import JsonFault, read_json
from orchestrator.images import BuiltImage
from orchestrator.runtime import ContainerSpec, EngineError, PodRuntime, create_labels

log = structlog.get_logger(__name__)

__all__ = ["VERSION_MEMORY", "VERSION_PIDS", "image_version", "shown_version", "version_cache_dir"]

VERSION_MEMORY, VERSION_PIDS = "1g", 256
CACHE_FORMAT = "version-cache/v1"


def version_cache_dir() -> Path:
    """HARNESS_PROBE_VERSION_CACHE, else $XDG_CACHE_HOME (or ~/.cache)/harness-probe/versions."""
    default = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "harness-probe" / "versions"
    return Path(os.environ.get("HARNESS_PROBE_VERSION_CACHE") or default)


def _cache_file(runtime: str, image_id: str, command: tuple[str, ...]) -> Path:
    key = json.dumps([runtime, image_id, list(command)]).encode()
    return version_cache_dir() / f"{hashlib.sha256(key).hexdigest()}.json"


def _remembered(path: Path, doc: dict[str, object]) -> str | None:
    try:
        found = read_json(path)
        validate(found, CACHE_FORMAT, str(path))
    except FileNotFoundError:
        return None
    except (OSError, JsonFault, FormatError) as exc:
        log.debug("version cache entry ignored", path=str(path), error=str(exc)[:300])
        return None
    if not isinstance(found, dict) or any(found.get(k) != v for k, v in doc.items()):
        return None
    return str(found["text"])


def _remember(path: Path, doc: dict[str, object], text: str) -> None:
    entry = {**doc, "text": text}
    try:
        validate(entry, CACHE_FORMAT, "version cache entry")
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        tmp.write_text(json.dumps(entry) + "\n")
        os.replace(tmp, path)
    except (OSError, FormatError) as exc:  # a cache that cannot be written only costs the next run a probe
        log.debug("version not remembered", error=str(exc)[:300])


def image_version(
    engine: PodRuntime,
    image: BuiltImage,
    command: tuple[str, ...],
    run_id: str,
    writable: dict[str, str],
    timeout: float,
) -> str | None:
    """The image's own version string, asked as hardened as a harness (no network, read-only root, limits)."""
    if not command:
        return None
    path = _cache_file(engine.name, image.image_id, command)
    doc: dict[str, object] = {"schema": CACHE_FORMAT, "runtime": engine.name, "image_id": image.image_id}
    doc["command"] = list(command)
    remembered = _remembered(path, doc)
    if remembered is not None:
        log.debug("version remembered", image=image.tag)
        return remembered
    spec = ContainerSpec(
        image=image.tag,
        name=f"hp-{run_id}-version-{secrets.token_hex(3)}",
        command=list(command),
        entrypoint=[],
        network="none",
        read_only=True,
        tmpfs=writable,
        labels=create_labels(run_id, role="version"),
        mem_limit=VERSION_MEMORY,
        cpus=1.0,
        pids_limit=VERSION_PIDS,
    )
    log.info("asking the version", image=image.tag)
    try:
        code, out = engine.run_once(spec, timeout)
    except EngineError as exc:
        log.warning("could not read version", image=image.tag, error=str(exc))
        return None
    if code is None:
        log.warning("version command did not finish; killed", image=image.tag, timeout=timeout)
        return None
    text = out.decode(errors="replace").strip()
    if code != 0:
        # What a failed command printed is its error (a traceback names "mitmproxy" too), never a version.
        log.warning("version command failed", image=image.tag, exit_code=code, output=text[:300])
        return None
    if text and image.image_id and len(text) <= 65536:
        _remember(path, doc, text)
    return text or None


# A version names a release in a few dozen characters; what the image printed is the harness's text, with no bound.
MAX_VERSION_CHARS = 200


def shown_version(version: str | None) -> str | None:
    """A version as runtime.json and the reports carry it: printable characters only (a terminal escape an image
    prints is no part of a version), at most MAX_VERSION_CHARS of them; None when nothing is left."""
    if not version:
        return None
    kept = "".join(ch for ch in version if ch.isprintable())[:MAX_VERSION_CHARS].strip()
    return kept or None
