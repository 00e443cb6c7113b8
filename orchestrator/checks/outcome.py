"""Checks on the terminal outcome the harness reported against the reply it really got."""

from __future__ import annotations

from orchestrator.checks.evidence import Evidence
from orchestrator.checks.model import Kind, check

__all__: list[str] = []


def _answer_text(reply: dict[str, object]) -> str | None:
    resp = reply.get("response")
    if isinstance(resp, dict):
        choices = resp.get("choices")
        if isinstance(choices, list) and choices:
            msg = choices[0].get("message") or {}
            content = msg.get("content")
            return content if isinstance(content, str) else None
    return None


@check(
    "outcome.final_answer",
    kind=Kind.BEHAVIORAL,
    evidence=("E6",),
    location="$.outcome.final_answer",
    needs=("rollout", "witness"),
    depends_on=("witness.final_answer_sent",),
    scope=("final_answer",),
)
def final_answer(ev: Evidence) -> list[str]:
    """The rollout's final answer is exactly the final answer the provider sent."""
    reply = ev.w.final_reply()
    assert reply is not None
    sent = _answer_text(reply)
    got = ev.r["outcome"]["final_answer"]
    if got != sent:
        return [f"rollout says {got!r}, the provider sent {sent!r}"]
    if ev.r["outcome"]["status"] != "completed":
        return [f"outcome.status is {ev.r['outcome']['status']!r} although a final answer was received"]
    return []
