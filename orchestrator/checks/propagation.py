"""Whether a terminal provider fault reaches the harness's own final result, and its record reaches that fault."""

from __future__ import annotations

from typing import Any

from orchestrator.checks.evidence import Evidence
from orchestrator.checks.fault_kinds import fault_terms
from orchestrator.checks.join import join_calls, loose_failures
from orchestrator.checks.model import Kind, check

__all__ = ["ended_on_fault"]


def ended_on_fault(ev: Evidence) -> dict[str, Any] | None:
    """The witnessed attempt whose scripted fault ended the episode: the last model attempt, a fault, with no final
    answer delivered after it; None when the episode did not end on a fault."""
    if ev.witness is None or ev.w.final_reply() is not None:
        return None
    model = ev.w.attempts("model")
    return model[-1] if model and model[-1].get("fault") else None


def _gave_up(ev: Evidence) -> bool:
    """Outside terminal-error scenarios: the harness ended on a scripted fault by itself (a harness killed at a
    deadline or timeout never gave up; its record is judged by the other checks)."""
    # Without the execution record (a captured episode replayed) whether it gave up is unknown: not judged there.
    exited = ev.execution is not None and ev.execution.get("status") == "exited"
    return exited and ended_on_fault(ev) is not None


def _described(a: dict[str, Any]) -> str:
    fault, status = a.get("fault"), a.get("status")
    if fault == "length_cut":
        return f"a reply cut at the token limit (finish_reason {a.get('finish_reason')})"
    if a.get("ended") != "complete":
        return f"a {fault} reply that ended {a.get('ended')}"
    return f"HTTP {status} ({fault})"


def _names(text: str, terms: list[str]) -> bool:
    low = text.lower()
    return any(term.lower() in low for term in terms)


@check(
    "error.propagated",
    kind=Kind.BEHAVIORAL,
    evidence=("E6", "E7"),
    location="$.outcome",
    needs=("rollout", "witness"),
    # In a terminal-error scenario a run reported as completed is outcome.terminal_error's finding first.
    depends_on=("outcome.fields", "outcome.terminal_error"),
    scope=("terminal_error",),
    claims=_gave_up,
)
def error_propagated(ev: Evidence) -> list[str]:
    """A terminal provider fault reaches the harness's own final result: the outcome says `error` and names the
    fault's status or category, and the record runs up to the attempt that ended the episode.

    Lies caught: a run that ended on a scripted 400, 429 or 529 reported as completed, or as an error with no word
    of what failed (`is_error` with a generic subtype, a result that says only "failed"); an answer cut at the token
    limit reported as the completed answer; a self-report that stops before the last call the wire saw (its stream
    ended while the run went on). P0 in the terminal-error scenarios (`model_error`) and in every episode that
    ended on its scripted fault with the harness exiting by itself. The exit status is judged apart
    (process.exit_status): it is process status, not the record.
    """
    last = ended_on_fault(ev)
    if last is None:
        return []  # a terminal-error scenario whose wire shows a reply after all: outcome.terminal_error's finding
    what = _described(last)
    out = ev.r["outcome"]
    status, kind, reason = out.get("status"), out.get("failure_kind"), out.get("failure_reason")
    reasons = []
    if status != "error":
        told = f" with the final answer {out.get('final_answer')!r}" if out.get("final_answer") else ""
        reasons.append(
            f"outcome.status is {status!r}{told} although the episode ended on {what} and no reply followed it"
        )
    said = " ".join(str(v) for v in (kind, reason) if v)
    terms = fault_terms(last)
    if status == "error" and not _names(said, terms):
        reasons.append(
            f"the outcome names neither the status nor the category of {what} "
            f"(failure_kind {kind!r}, failure_reason {reason!r}; any of {terms[:6]} would)"
        )
    joined = [a for _, a in join_calls(ev).pairs] + [a for _, a in loose_failures(ev)]
    if not any(a is last for a in joined):
        reasons.append(
            f"the record stops before the last call the wire saw: {last['attempt_id']} ({what}) joins no recorded call"
        )
    return reasons
