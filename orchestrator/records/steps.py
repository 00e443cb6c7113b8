"""An agent step: numbered, timestamped, with the model calls it made (probe-rollout/v1 `steps[]`)."""
# No `from __future__ import annotations`: TypedDict reads NotRequired/Required from evaluated annotations.

from typing import NotRequired, TypedDict

from orchestrator.records.calls import TokenStats

__all__ = ["Step"]


class Step(TypedDict):
    step_no: int
    invocation_id: str | None
    timestamp: str | None
    model_call_refs: list[str]
    token_stats: NotRequired[TokenStats]
