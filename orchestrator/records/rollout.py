"""The canonical rollout `probe-rollout/v1`: what a harness itself reported, as plain JSON with typed keys."""
# No `from __future__ import annotations`: TypedDict reads NotRequired/Required from evaluated annotations.

from typing import Any, NotRequired, TypedDict

from orchestrator.records.calls import ModelCall
from orchestrator.records.gaps import Gap
from orchestrator.records.invocations import Invocation
from orchestrator.records.outcome import Outcome
from orchestrator.records.steps import Step
from orchestrator.records.tools import ToolRecord

__all__ = ["Compaction", "HarnessId", "Provenance", "Rollout"]


class HarnessId(TypedDict):
    name: str
    version: str | None


class Provenance(TypedDict, total=False):
    """Which structural facts the normalizer inferred rather than read (absent: recorded)."""

    retry_placement: str  # recorded | inferred


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
