"""How a run ended, as the harness recorded it (probe-rollout/v1 `outcome`)."""
# No `from __future__ import annotations`: TypedDict reads NotRequired/Required from evaluated annotations.

from typing import TypedDict

__all__ = ["Outcome", "outcome"]


class Outcome(TypedDict):
    final_answer: str | None
    status: str  # completed | error | unknown
    failure_kind: str | None
    failure_reason: str | None


def outcome(
    status: str, final_answer: str | None = None, failure_kind: str | None = None, failure_reason: str | None = None
) -> Outcome:
    """An outcome in the schema's key order."""
    return {
        "final_answer": final_answer,
        "status": status,
        "failure_kind": failure_kind,
        "failure_reason": failure_reason,
    }
