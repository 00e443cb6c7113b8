"""The evidence profile: every check registered in dependency order, and the runner."""

from __future__ import annotations

# Import order is registration order, which run_checks relies on for depends_on.
from orchestrator.checks import exercise, outcome, tools  # noqa: F401
from orchestrator.checks.evidence import Evidence, Witness, read_witness
from orchestrator.checks.model import REGISTRY, Check, CheckResult, Kind, Status, gate, run_checks

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
]
