"""A harness image with another release (`--harness-version`) or a local build (`--harness-source`) than its pin."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from orchestrator.images import ImageVariant, image_folder
from orchestrator.variants.packages import FOLDER_IMAGES, Package, package_of, pinned_version, repin_requirements
from orchestrator.variants.registry import check_version, lock_npm, lock_pypi
from orchestrator.variants.source import (
    SOURCE_DIR,
    SourceError,
    image_folder_files,
    npm_tarball,
    python_files,
    source_sha256,
    source_stat,
)

__all__ = ["VariantError", "source_variant", "version_variant"]

_CA = "/usr/local/share/harness-probe/build-ca-bundle.pem"


class VariantError(ValueError):
    """A variant that cannot be made for this harness (no registry release, nothing to install)."""


def _package(image: str, harness: str, flag: str) -> Package:
    pkg = package_of(image)
    if pkg is None:
        why = "its code is its image folder" if image in FOLDER_IMAGES else "no registry package is declared for it"
        hint = " (use --harness-source with a copy of that folder)" if image in FOLDER_IMAGES else ""
        raise VariantError(f"{flag}: harness {harness!r} has no registry release: {why}{hint}")
    return pkg


def _record(kind: str, pinned: str | None, **fields: Any) -> dict[str, Any]:
    return {"kind": kind, "pinned": pinned, **fields}


def version_variant(
    image: str, harness: str, version: str, extra_ca: Path | None
) -> tuple[ImageVariant, dict[str, Any]] | None:
    """The image folder with `version` pinned and its lock resolved from the registry now; None when it is the pin.

    UnknownVersion (a RegistryError) when the registry has no such release: raised before anything is built.
    """
    pkg = _package(image, harness, "--harness-version")
    folder = image_folder(image)
    pinned = pinned_version(folder, pkg)
    if version == pinned:
        return None
    check_version(pkg, version, extra_ca)
    if pkg.registry == "npm":
        manifest = json.loads((folder / "package.json").read_text())
        manifest["dependencies"][pkg.name] = version
        package_json = (json.dumps(manifest, indent=2) + "\n").encode()
        files = {"package.json": package_json, "package-lock.json": lock_npm(package_json, extra_ca)}
    else:
        requirements = repin_requirements((folder / "requirements.in").read_text(), pkg, version).encode()
        files = {"requirements.in": requirements, "requirements.lock": lock_pypi(requirements, extra_ca)}
    record = _record("version", pinned, package=f"{pkg.registry}:{pkg.name}", version=version)
    return ImageVariant(f"version-{version}", files), record


def _layer(install: str) -> bytes:
    # The pinned image with the source installed over its release: its user, home and launch stay as the pin's.
    return "\n".join(
        [
            "# harness-probe --harness-source: the pinned image with a local build installed over its release.",
            "ARG BASE_IMAGE",
            "FROM ${BASE_IMAGE}",
            "USER root",
            f"COPY {SOURCE_DIR} /opt/{SOURCE_DIR}",
            f"RUN {install}",
            "USER probe",
            "WORKDIR /home/probe",
            "",
        ]
    ).encode()


def source_variant(image: str, harness: str, source: Path) -> tuple[ImageVariant, dict[str, Any]]:
    """The harness installed from a local source the way its adapter installs it; SourceError names a bad one."""
    try:
        source = source.expanduser()
    except RuntimeError as exc:  # `~name` of no such user
        raise SourceError(f"--harness-source: {source}: {exc}") from None
    source_stat(source, "--harness-source:")
    if image in FOLDER_IMAGES:
        files = image_folder_files(source, image)
        variant = ImageVariant(f"source-{source_sha256(source)[:12]}", files, whole=True)
        return variant, _record(
            "source",
            None,
            source=str(source.resolve()),
            source_kind="image-folder",
            source_sha256=source_sha256(source),
        )
    pkg = _package(image, harness, "--harness-source")
    pinned = pinned_version(image_folder(image), pkg)
    if pkg.registry == "npm":
        tarball = npm_tarball(source, pkg)
        install = (
            f"cd {pkg.prefix} && npm_config_cafile={_CA} NODE_EXTRA_CA_CERTS={_CA} "
            f"npm install --no-save --no-audit --no-fund /opt/{SOURCE_DIR}/package.tgz && npm cache clean --force"
        )
        files = {f"{SOURCE_DIR}/package.tgz": tarball}
        kind = "npm-folder" if source.is_dir() else "npm-tarball"
    else:
        target, files = python_files(source, pkg)
        install = (
            f"{pkg.prefix}/bin/pip uninstall --yes --disable-pip-version-check {pkg.name} && "
            f"PIP_CERT={_CA} {pkg.prefix}/bin/pip install --no-cache-dir --disable-pip-version-check "
            + shlex.quote(f"/opt/{target}")
        )
        kind = "python-folder" if source.is_dir() else "wheel"
    files["Dockerfile"] = _layer(install)
    digest = source_sha256(source)
    record = _record("source", pinned, package=f"{pkg.registry}:{pkg.name}", source=str(source.resolve()))
    record.update(source_kind=kind, source_sha256=digest)
    return ImageVariant(f"source-{digest[:12]}", files, whole=True, on_pinned=True), record
