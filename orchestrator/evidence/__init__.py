"""Evidence file formats: their JSON Schemas and the one validator that reads them."""

from __future__ import annotations

from orchestrator.evidence.validate import (
    Fault,
    FormatError,
    envelope_faults,
    faults,
    fragment_batch_precheck,
    fragment_faults,
    fragment_precheck,
    holds_tuple,
    load_json,
    schema_path,
    validate,
)

__all__ = [
    "Fault",
    "FormatError",
    "envelope_faults",
    "faults",
    "fragment_batch_precheck",
    "fragment_faults",
    "fragment_precheck",
    "holds_tuple",
    "load_json",
    "schema_path",
    "validate",
]
