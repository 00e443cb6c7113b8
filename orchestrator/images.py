"""Image builds: the raw Debian root (pulled or bootstrapped), then each image tagged by a hash of its inputs."""

from __future__ import annotations

import hashlib
import io
import os
import re
import subprocess
import tarfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from orchestrator.errors import BuildError
from orchestrator.evidence import FormatError, load_json
from orchestrator.harnesses import plugin_image_folders
from orchestrator.resources import images_dir, proxy_addons_dir
from orchestrator.runtime import Engine, EngineAPIError, ImageNotFound

log = structlog.get_logger(__name__)

IMAGES_DIR = images_dir()
DEBIAN_TAG = "harness-probe/debian:trixie"
DEBIAN_UPSTREAM = ("debian", "trixie-slim")
INPUTS_LABEL = "harness-probe.inputs-sha256"
LOCAL_ONLY = "LOCAL-ONLY"
_CONTEXT_MTIME = 1_700_000_000
# Bumped whenever the way a context is assembled changes, so such a change also yields new tags.
_CONTEXT_FORMAT = 2
_SKIP_PARTS = {"__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache"}

__all__ = [
    "ArchiveImages",
    "BuildError",
    "BuildOptions",
    "BuiltImage",
    "ImageBuilder",
    "ImageVariant",
    "context_digests",
    "image_folder",
    "image_names",
    "local_only",
    "parent_of",
]


@dataclass(frozen=True)
class BuildOptions:
    extra_ca: Path | None = None  # PEM bundle trusted by package downloads during builds only
    rebuild: bool = False


@dataclass(frozen=True)
class BuiltImage:
    name: str
    tag: str
    image_id: str
    inputs_sha256: str
    files: dict[str, str]  # context path -> sha256, recorded in runtime.json
    built: bool  # False when an existing image with the same inputs was reused
    seconds: float


@dataclass(frozen=True)
class ImageVariant:
    """A harness image built from other inputs than its pinned ones (`run --harness-version/--harness-source`).

    Its tag is made of its inputs as every image's is, so a variant never shares a tag with the pin.
    """

    key: str  # names the variant in logs and keeps it apart from the pin among the builds of one run
    files: dict[str, bytes]  # context path -> content, replacing or adding to the image folder's files
    whole: bool = False  # `files` are the whole context (an image folder given as the source)
    on_pinned: bool = False  # built FROM the pinned image (a source installed over the pinned release)


_IMAGE_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*")


def image_names() -> list[str]:
    return sorted(p.name for p in IMAGES_DIR.iterdir() if (p / "Dockerfile").is_file())


def image_folder(name: str) -> Path:
    """images/NAME of harness-probe, else the folder a harness plugin ships for an image of that name."""
    if not _IMAGE_NAME.fullmatch(name):
        # `../../elsewhere` would be any folder of the host holding a Dockerfile, built as one of ours.
        raise BuildError(f"{name!r} is not an image name (lower-case letters, digits, '.', '_' and '-')")
    builtin = IMAGES_DIR / name
    if (builtin / "Dockerfile").is_file():
        return builtin
    plugin = plugin_image_folders().get(name)
    if plugin is not None:
        return plugin
    raise BuildError(f"no image named {name!r} (known: {', '.join(image_names())}, and images of harness plugins)")


def local_only(name: str) -> str | None:
    """Why an image may never leave the engine it was built in (its folder's LOCAL-ONLY file: a licence that
    forbids redistributing it), or None. harness-probe writes no archive of such an image, nor does its CI cache."""
    marker = image_folder(name) / LOCAL_ONLY
    return (marker.read_text(encoding="utf-8").strip() or "its folder says so") if marker.is_file() else None


def parent_of(name: str) -> str:
    """The image an image builds FROM: `base`, unless its folder names another in a PARENT file."""
    marker = image_folder(name) / "PARENT"
    return marker.read_text().strip() if marker.is_file() else "base"


def _extra_context(name: str) -> dict[str, Path]:
    # The proxy image carries the addon package; nothing else reaches outside its own folder.
    return {"proxy_addons": proxy_addons_dir()} if name == "proxy" else {}


def _walk(root: Path, prefix: str) -> Iterable[tuple[str, Path]]:
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and not (set(rel.parts) & _SKIP_PARTS) and path.suffix != ".pyc":
            yield f"{prefix}{rel.as_posix()}", path


def _context_files(name: str, extra_ca: bytes) -> dict[str, bytes]:
    files = {rel: p.read_bytes() for rel, p in _walk(image_folder(name), "")}
    for dest, src in _extra_context(name).items():
        files.update({rel: p.read_bytes() for rel, p in _walk(src, f"{dest}/")})
    files["build-ca.pem"] = extra_ca
    return files


def context_digests(name: str, extra_ca: bytes = b"") -> dict[str, str]:
    """Build-context path -> sha256: with the parent's id, all an image's tag is made of."""
    return {rel: hashlib.sha256(data).hexdigest() for rel, data in _context_files(name, extra_ca).items()}


def _tar(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for rel, data in sorted(files.items()):
            info = tarfile.TarInfo(rel)
            info.size = len(data)
            info.mode = 0o755 if rel.endswith(".sh") else 0o644
            # A fixed, non-zero mtime: builds stay reproducible, and mitmproxy's script loader (which only
            # loads a script whose mtime is newer than 0) sees the addon.
            info.mtime = _CONTEXT_MTIME
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


class ImageBuilder:
    """Builds images in dependency order (debian -> base -> the rest), never rebuilding unchanged inputs."""

    def __init__(self, engine: Engine, options: BuildOptions, on_line: Callable[[str], None] | None = None) -> None:
        self.engine = engine
        self.options = options
        self.on_line = on_line or (lambda _line: None)
        self._done: dict[str, BuiltImage] = {}
        self._extra_ca = options.extra_ca.read_bytes() if options.extra_ca else b""

    def ensure_debian(self) -> str:
        """The raw root every image starts from: an existing tag, else a pull, else debootstrap + import."""
        client = self.engine.client
        try:
            return str(client.images.get(DEBIAN_TAG).id)
        except ImageNotFound:
            pass
        imported = self.engine.import_image(DEBIAN_TAG)
        if imported is not None:
            return imported
        try:
            log.info("pulling base", image=":".join(DEBIAN_UPSTREAM))
            img = client.images.pull(*DEBIAN_UPSTREAM)
            img.tag(DEBIAN_TAG)
            return str(img.id)
        except EngineAPIError as exc:
            log.info("no registry answers; bootstrapping Debian trixie", reason=str(exc).splitlines()[0][:160])
        script = IMAGES_DIR / "base" / "bootstrap.sh"
        # The root filesystem goes into this engine with its own CLI's `import` (Docker's or Podman's).
        env = {**os.environ, "HARNESS_PROBE_IMPORT": " ".join(self.engine.import_command())}
        proc = subprocess.run(["bash", str(script), DEBIAN_TAG], capture_output=True, text=True, check=False, env=env)
        if proc.returncode != 0:
            raise BuildError(f"bootstrapping {DEBIAN_TAG} failed:\n{proc.stderr.strip()[-3000:]}")
        return str(client.images.get(DEBIAN_TAG).id)

    def build(self, name: str, variant: ImageVariant | None = None) -> BuiltImage:
        key = name if variant is None else f"{name}@{variant.key}"
        if key in self._done:
            return self._done[key]
        image_folder(name)  # an unknown name fails here, before anything is built
        if name == "base":
            parent_id, parent_arg = self.ensure_debian(), DEBIAN_TAG
        else:
            parent = self.build(name if variant is not None and variant.on_pinned else parent_of(name))
            parent_id, parent_arg = parent.image_id, parent.tag
        files = _context_files(name, self._extra_ca)
        if variant is not None:
            files = {"build-ca.pem": files["build-ca.pem"]} if variant.whole else files
            files.update(variant.files)
        digests = {rel: hashlib.sha256(data).hexdigest() for rel, data in files.items()}
        h = hashlib.sha256()
        h.update(f"context-format={_CONTEXT_FORMAT}\nparent={parent_id}\n".encode())
        for rel, digest in sorted(digests.items()):
            h.update(f"{rel}={digest}\n".encode())
        inputs = h.hexdigest()
        tag = f"harness-probe/{name}:{inputs[:16]}"
        start = time.monotonic()
        client = self.engine.client
        if not self.options.rebuild:
            try:
                existing = client.images.get(tag)
                result = BuiltImage(name, tag, str(existing.id), inputs, digests, False, time.monotonic() - start)
                self._done[key] = result
                log.info("image up to date", image=tag)
                return result
            except ImageNotFound:
                pass
            # Same inputs built by another engine on this machine (Podman beside Docker): the archive keeps the
            # image id, so importing gives the same tag a build would, in seconds.
            imported = self.engine.import_image(tag)
            if imported is not None:
                result = BuiltImage(name, tag, imported, inputs, digests, False, time.monotonic() - start)
                self._done[key] = result
                log.info("image imported", image=tag, seconds=round(result.seconds, 1))
                return result
        log.info("building image", image=tag)
        arg_name = "DEBIAN_IMAGE" if name == "base" else "BASE_IMAGE"
        image_id = self._docker_build(tag, _tar(files), {arg_name: parent_arg}, {INPUTS_LABEL: inputs})
        result = BuiltImage(name, tag, image_id, inputs, digests, True, time.monotonic() - start)
        self._done[key] = result
        log.info("built image", image=tag, seconds=round(result.seconds, 1))
        return result

    def _docker_build(self, tag: str, context: bytes, buildargs: dict[str, str], labels: dict[str, str]) -> str:
        tail: list[str] = []
        error: str | None = None
        stream: Iterable[dict[str, Any]] = self.engine.client.api.build(
            fileobj=io.BytesIO(context),
            custom_context=True,
            tag=tag,
            buildargs=buildargs,
            labels=labels,
            rm=True,
            forcerm=True,
            pull=False,
            decode=True,
        )
        for chunk in stream:
            if "stream" in chunk:
                for line in str(chunk["stream"]).splitlines():
                    if line.strip():
                        tail = [*tail[-60:], line]
                        self.on_line(line)
            if "error" in chunk:
                error = str(chunk["error"])
        if error:
            hint = ""
            if "CERTIFICATE_VERIFY_FAILED" in "\n".join(tail) and not self._extra_ca:
                hint = "\nHint: TLS is intercepted here; pass --extra-ca PATH or set HARNESS_PROBE_EXTRA_CA."
            raise BuildError(f"building {tag} failed: {error}\n" + "\n".join(tail[-25:]) + hint)
        return str(self.engine.client.images.get(tag).id)


class ArchiveImages:
    """Images for a runtime that cannot build them (Apptainer): the archives `harness-probe images export` wrote,
    found by name in their `images.json` (image-archives/v1), with the content-hash tags a build would give."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        manifest = directory / "images.json"
        if not manifest.is_file():
            raise BuildError(f"{directory} has no images.json: write it with `harness-probe images export`")
        try:
            self._entries: dict[str, dict[str, Any]] = load_json(manifest, "image-archives/v1")["images"]
        except FormatError as exc:
            raise BuildError(str(exc)) from None

    def build(self, name: str) -> BuiltImage:
        entry = self._entries.get(name)
        if entry is None:
            raise BuildError(
                f"{self.directory}/images.json has no image {name!r} (it has: {', '.join(sorted(self._entries))}); "
                f"export it with `harness-probe images export {name} -o DIR`"
            )
        archive = self.directory / entry["archive"]
        if not archive.is_file() or archive.stat().st_size != entry["bytes"]:
            raise BuildError(f"{archive} is missing or not the size images.json records ({entry['bytes']} bytes)")
        return BuiltImage(name, entry["tag"], entry["image_id"], entry["inputs_sha256"], {}, False, 0.0)


def default_extra_ca() -> Path | None:
    """HARNESS_PROBE_EXTRA_CA, else the bundle pip is told to trust (PIP_CERT): builds install from PyPI too."""
    for var in ("HARNESS_PROBE_EXTRA_CA", "PIP_CERT"):
        value = os.environ.get(var)
        if value and Path(value).is_file():
            return Path(value)
    return None
