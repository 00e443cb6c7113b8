"""Harness images other than the pins: another registry release, or a local build (a developer's checkout)."""

from __future__ import annotations

from orchestrator.variants.packages import FOLDER_IMAGES, PACKAGES, Package, package_of, pinned_version
from orchestrator.variants.registry import RegistryError, UnknownVersion, check_version, newest_version
from orchestrator.variants.source import SourceError, source_sha256
from orchestrator.variants.variant import VariantError, source_variant, version_variant

__all__ = [
    "FOLDER_IMAGES",
    "PACKAGES",
    "Package",
    "RegistryError",
    "SourceError",
    "UnknownVersion",
    "VariantError",
    "check_version",
    "newest_version",
    "package_of",
    "pinned_version",
    "source_sha256",
    "source_variant",
    "version_variant",
]
