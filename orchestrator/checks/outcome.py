"""Behavioral checks on the terminal outcome the harness reported against what it really got."""

from __future__ import annotations

from orchestrator.checks.attempts import witness_key
from orchestrator.checks.evidence import Evidence
from orchestrator.checks.model import Kind, check

__all__: list[str] = []


@check(
    "outcome.final_answer",
    kind=Kind.BEHAVIORAL,
    evidence=("E6",),
    location="$.outcome.final_answer",
    needs=("rollout", "witness"),
    depends_on=("outcome.fields", "witness.final_answer_sent"),
    scope=("final_answer",),
    # A scenario where the harness may end on its fault (expected outcome `either`) requires no final answer; once the
    # wire delivered one, the rollout's answer is still held to it.
    claims=lambda ev: ev.witness is not None and ev.w.final_reply() is not None,
)
def final_answer(ev: Evidence) -> list[str]:
    """The rollout's final answer is exactly the final answer the provider sent, and the run is marked completed.

    Outside the `final_answer` scope (a harness may end on the scenario's fault) it applies once the wire delivered
    the final answer."""
    reply = ev.w.final_reply()
    assert reply is not None
    sent = ev.w.answer_of(reply)
    out = ev.r["outcome"]
    if out["final_answer"] != sent:
        return [f"rollout says {out['final_answer']!r}, the provider sent {sent!r}"]
    if out["status"] != "completed":
        return [f"outcome.status is {out['status']!r} although the final answer was received"]
    return []


@check(
    "outcome.terminal_error",
    kind=Kind.BEHAVIORAL,
    evidence=("E6", "E7"),
    location="$.outcome.status",
    needs=("rollout", "witness"),
    depends_on=("outcome.fields",),
    scope=("terminal_error",),
)
def terminal_error(ev: Evidence) -> list[str]:
    """When every attempt failed, the rollout still exists and records the terminal error as the outcome."""
    reasons = []
    if any(witness_key(a)[0] == "ok" for a in ev.w.attempts("model")):
        reasons.append("the witness shows a successful reply in a scenario where every attempt should fail")
    out = ev.r["outcome"]
    if out["status"] != "error":
        reasons.append(f"outcome.status is {out['status']!r}; every model attempt failed")
    if out.get("final_answer"):
        reasons.append(f"outcome.final_answer {out['final_answer']!r} although no reply was ever received")
    return reasons
