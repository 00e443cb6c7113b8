"""One episode's result `scenario_result.json`: execution, normalization, collection and the checks' rows."""
# No `from __future__ import annotations`: TypedDict reads NotRequired/Required from evaluated annotations.

from typing import NotRequired, TypedDict

__all__ = [
    "CheckRow",
    "Collection",
    "CollectionFinding",
    "CollectionLimits",
    "Execution",
    "Gate",
    "NormalizeRecord",
    "ScenarioResult",
]


class Execution(TypedDict):
    """How the harness process ended: recorded apart from the evidence, never a check."""

    status: str
    exit_code: int | None
    seconds: float
    timeout_seconds: float
    deadline_seconds: NotRequired[float]
    error: str | None


class NormalizeRecord(TypedDict):
    status: str  # ok | error
    message: str | None


class CollectionLimits(TypedDict):
    max_bytes: int
    max_files: int
    seconds: float


class CollectionFinding(TypedDict):
    kind: str
    path: str
    reason: str


class Collection(TypedDict):
    limits: CollectionLimits
    bytes: int
    files: int
    seconds: float
    findings: list[CollectionFinding]
    findings_dropped: int


class CheckRow(TypedDict):
    """One check's row as results and summaries write it."""

    id: str
    kind: str
    tier: str
    evidence: list[str]
    location: str
    status: str
    reasons: list[str]


class Gate(TypedDict):
    P0: bool
    P1: NotRequired[bool]


class ScenarioResult(TypedDict):
    schema: str
    profile: str
    harness: str
    scenario: str
    run_id: str
    episode_id: str
    started_at: str
    finished_at: str
    execution: Execution
    normalize: NormalizeRecord
    collection: NotRequired[Collection]
    inputs_unavailable: NotRequired[dict[str, str]]
    checks: list[CheckRow]
    gate: Gate
    verdict: str
