"""Checks that join the rollout's tool records to the tool calls the witness saw issued."""

from __future__ import annotations

from collections import Counter

from orchestrator.checks.evidence import Evidence
from orchestrator.checks.model import Kind, check

__all__: list[str] = []


@check(
    "tools.witness_ids",
    kind=Kind.BEHAVIORAL,
    evidence=("E5",),
    location="$.tool_calls[*].tool_call_id",
    needs=("rollout", "witness"),
    scope=("tools",),
)
def witness_ids(ev: Evidence) -> list[str]:
    """Each witnessed tool call id appears exactly once in the rollout's tool records, and no others do."""
    recorded = Counter(t["tool_call_id"] for t in ev.r["tool_calls"])
    witnessed = Counter(c["tool_call_id"] for c in ev.w.tool_calls())
    reasons = []
    for cid in sorted(witnessed):
        n = recorded.get(cid, 0)
        if n != 1:
            reasons.append(f"{cid}: witnessed once, recorded {n} times")
    reasons += [f"{cid}: recorded but never issued by the provider" for cid in sorted(set(recorded) - set(witnessed))]
    return reasons
