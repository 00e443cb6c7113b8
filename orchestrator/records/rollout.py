"""The canonical rollout `probe-rollout/v1`: what a harness itself reported, as plain JSON with typed keys."""
# No `from __future__ import annotations`: TypedDict reads NotRequired/Required from evaluated annotations.

from typing import Any, NotRequired, TypedDict

from orchestrator.records.calls import ModelCall
from orchestrator.records.gaps import Gap
from orchestrator.records.invocations import Invocation
from orchestrator.records.outcome import Outcome
from orchestrator.records.steps import Step
from orchestrator.records.tools import ToolRecord

__all__ = ["Compaction", "Corroboration", "HarnessId", "Provenance", "Rollout"]


class HarnessId(TypedDict):
    name: str
    version: str | None


class Corroboration(TypedDict):
    """A fact as another of the harness's sources records it (`sources.agree` holds the two equal)."""

    fact: str  # JSON Pointer into the rollout
    source: str
    value: Any


class Provenance(TypedDict, total=False):
    """Which structural facts the normalizer inferred rather than read (absent: recorded), and, for a harness with
    several records, which record each fact was read from and what the others say of it."""

    retry_placement: str  # recorded | inferred
    sources: dict[str, str]  # name -> what the record is
    facts: dict[str, str]  # JSON Pointer -> source name (the longest prefix wins)
    corroboration: list[Corroboration]


class Compaction(TypedDict):
    invocation_id: str | None
    step_no: int | None
    model_call_refs: list[str]
    timestamp: NotRequired[str | None]


class Rollout(TypedDict):
    schema: str
    harness: HarnessId
    task_id: str | None
    rollout_id: str | None
    model_calls: list[ModelCall]
    invocations: list[Invocation]
    steps: list[Step]
    tool_calls: list[ToolRecord]
    outcome: Outcome
    provenance: NotRequired[Provenance]
    compactions: NotRequired[list[Compaction]]
    gaps: list[Gap]
    extensions: NotRequired[dict[str, Any]]
