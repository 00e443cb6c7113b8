"""Harbor's trajectory format (ATIF) in and out: validation, ATIF -> probe-rollout/v1, probe-rollout/v1 -> ATIF."""

from __future__ import annotations

from orchestrator.atif.files import ATIF_NAME, ExportResult, export_atif, find_atif, read_atif_rollout
from orchestrator.atif.read import ATIF_GAPS, atif_to_rollout
from orchestrator.atif.validate import ATIF_FORMAT, atif_faults, extension_faults, load_atif, validate_atif
from orchestrator.atif.write import EXTENSION, rollout_to_atif

__all__ = [
    "ATIF_FORMAT",
    "ATIF_GAPS",
    "ATIF_NAME",
    "EXTENSION",
    "ExportResult",
    "atif_faults",
    "atif_to_rollout",
    "export_atif",
    "extension_faults",
    "find_atif",
    "load_atif",
    "read_atif_rollout",
    "rollout_to_atif",
    "validate_atif",
]
