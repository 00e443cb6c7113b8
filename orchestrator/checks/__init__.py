"""The evidence profile probe-p0/v1: every check registered in dependency order, and the runner."""

from __future__ import annotations

import importlib

from orchestrator.checks.evidence import Evidence, Witness, read_witness, scope_of
from orchestrator.checks.model import REGISTRY, Check, CheckResult, Kind, Status, gate, run_checks

# Registration order is dependency order (a check may depend only on checks registered before it), and it
# is the order of the report's rows: schema, then semantic, then behavioral, then process.
_PROFILE_MODULES = (
    "rollout_schema",
    "rollout_semantic",
    "sources",
    "exercise",
    "attempts",
    "wire",
    "history",
    "recorded",
    "totals",
    "tools",
    "outcome",
    "egress",
    "compaction",
    "propagation",
    "retries",
    "malformed",
    "authored",
    "parity",
    "process",
)
for _module in _PROFILE_MODULES:
    importlib.import_module(f"orchestrator.checks.{_module}")

PROFILE = "probe-p0/v1"

__all__ = [
    "PROFILE",
    "REGISTRY",
    "Check",
    "CheckResult",
    "Evidence",
    "Kind",
    "Status",
    "Witness",
    "gate",
    "read_witness",
    "run_checks",
    "scope_of",
]
