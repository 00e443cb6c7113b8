"""Behavioral checks that hold what a rollout recorded beside its calls to the exchange on the wire: the time of each
step, and the response body a call kept."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from orchestrator.checks.bodies import body_difference
from orchestrator.checks.evidence import Evidence
from orchestrator.checks.join import (
    attempt_keys,
    dicts,
    held_pairs,
    join_calls,
    loose_failures,
    model_calls,
    order_pairs_beside,
    shared,
)
from orchestrator.checks.model import Kind, Unverifiable, check
from orchestrator.checks.times import TimeCache, latest
from orchestrator.checks.wire import CLOCK_TOLERANCE, EARLY_START_LIMIT

__all__: list[str] = []

Attempt = dict[str, Any]


def _wire_steps(ev: Evidence) -> tuple[dict[int, int], list[Attempt]]:
    """The wire's steps (the failed attempts retried before a reply, with that reply): the step of each model attempt
    (by id() of the attempt), and each step's first attempt."""
    step_of: dict[int, int] = {}
    firsts: list[Attempt] = []
    ended = True
    for a, key in zip(ev.w.attempts("model"), attempt_keys(ev, "model"), strict=True):
        if ended:
            firsts.append(a)
        step_of[id(a)] = len(firsts) - 1
        ended = key[0] == "ok"
    return step_of, firsts


@check(
    "steps.witness_times",
    kind=Kind.BEHAVIORAL,
    evidence=("E3",),
    location="$.steps[*].timestamp",
    needs=("rollout", "witness"),
    depends_on=("calls.present",),
    scope=("steps",),
)
def steps_witness_times(ev: Evidence) -> list[str]:
    """Each step's recorded time falls within that step's life on the wire (shared clock, 1 s tolerance).

    Lie caught: a step's timestamp moved away from its calls (shifted by minutes, or given another step's time
    where a tool or a retry kept the steps apart). A step's life runs from the first request of its wire step
    (retries included, recorded or not; a harness may stamp the step up to 30 s before that request, as a call's
    start may be) to the first request of the next wire step (a harness may stamp the step when it ends, after its
    tools ran: Terminus 2 stamps it a second or two after the reply), or for the last one to the last event on the
    wire. The steps' calls are joined to attempts as calls.witness_times joins them. Steps that record no time
    (steps.numbering's finding) or whose calls pair with no attempt are not judged; where none can be, the time is
    unverifiable (not applicable, named).
    """
    steps = dicts(ev.r.get("steps"))
    times = TimeCache()
    stamped = [(s, t) for s in steps if (t := times.parse(s.get("timestamp"))) is not None]
    if not stamped:
        raise Unverifiable("gap steps.timestamps_unrecorded: no step records a timestamp (ISO-8601)")
    pairs, unheld = held_pairs(ev)
    reasons = [f"{unheld}, so the times of their steps are held to no attempt"] if unheld else []
    step_of, firsts = _wire_steps(ev)
    # Each recorded call's wire step, by its id (a call paired with no model attempt has none).
    placed = {
        c["model_call_id"]: step_of[id(a)]
        for c, a in pairs
        if isinstance(c.get("model_call_id"), str) and id(a) in step_of
    }
    judged = 0
    for s, when in stamped:
        refs = s.get("model_call_refs")
        at = [placed[r] for r in refs if isinstance(r, str) and r in placed] if isinstance(refs, list) else []
        if not at:
            continue  # calls the wire cannot pair: attempts.multiset's finding
        judged += 1
        first, last = min(at), max(at)
        start = times.parse(firsts[first].get("started_at"))
        nxt = firsts[last + 1] if last + 1 < len(firsts) else None
        until = times.parse(nxt.get("started_at")) if nxt is not None else _last_event(ev, times)
        if start is not None and when < start - EARLY_START_LIMIT:
            reasons.append(
                f"{_step_name(s)}: timestamp {s['timestamp']} more than {EARLY_START_LIMIT.seconds} s before its first "
                f"request ({firsts[first]['attempt_id']}) arrived at {firsts[first]['started_at']}"
            )
        if until is not None and when > until + CLOCK_TOLERANCE:
            after = (
                f"the next step's first request ({nxt['attempt_id']}) arrived at {nxt['started_at']}"
                if nxt is not None
                else f"the last event on the wire, at {until.isoformat()}"
            )
            reasons.append(f"{_step_name(s)}: timestamp {s['timestamp']} after {after}")
    if not judged and not reasons:
        raise Unverifiable(
            "gap steps.calls_unjoined: no timestamped step references a call that pairs with an attempt on the wire "
            "(a call recorded with neither status nor response id, as ATIF's core fields hold one, joins none)"
        )
    return reasons


def _step_name(s: dict[str, Any]) -> str:
    return f"step {s.get('step_no')!r} of invocation {s.get('invocation_id')!r}"


def _last_event(ev: Evidence, times: TimeCache) -> datetime | None:
    """When the last event on the wire was written (the proxy's `end`, when it shut down cleanly)."""
    return shared(ev, "last_event", lambda e: latest((x.get("at") for x in e.w.events), times))


def _name(c: dict[str, Any]) -> str:
    return str(c.get("model_call_id"))


def _body_id(body: Any) -> Any:
    return body.get("id") if isinstance(body, dict) else None


@check(
    "calls.witness_response",
    kind=Kind.BEHAVIORAL,
    evidence=("E1",),
    location="$.model_calls[*].response",
    needs=("rollout", "witness"),
)
def calls_witness_response(ev: Evidence) -> list[str]:
    """Each response body a call records is the reply the proxy sent for that attempt.

    Lie caught: a recorded reply edited (its text, tool calls, usage or finish reason changed), one attempt's reply
    recorded for another, or a body recorded for an attempt the proxy answered with nothing. Compared as the same
    body honestly written: keys in any order, numbers in any form, a streamed reply as the object its events
    assemble (what the witness keeps), and fields a client library writes out as null or empty where the wire left
    them out. A call is joined to its attempt as the other wire checks join it, or else by the id its body carries.
    A harness that records no response body leaves this unverifiable: not applicable, the gap named.
    """
    calls = [c for c in model_calls(ev) if c.get("response") is not None]
    if not calls:
        raise Unverifiable("gap calls.response_unrecorded: no model call records the response body it received")
    attempt_of = {id(c): a for c, a in [*join_calls(ev).pairs, *loose_failures(ev), *order_pairs_beside(ev)]}
    by_id = {a["response_id"]: a for a in ev.w.attempts(None) if isinstance(a.get("response_id"), str)}
    reasons: list[str] = []
    cut: list[str] = []
    for c in calls:
        body = c["response"]
        a = attempt_of.get(id(c)) or by_id.get(_body_id(body))
        if a is None:
            reasons.append(
                f"{_name(c)}: records a response body, but the call pairs with no attempt and the body names no "
                f"reply the proxy sent (id {_body_id(body)!r})"
            )
        elif a.get("ended") == "cut":
            cut.append(f"{_name(c)} ({a['attempt_id']})")
        elif a.get("ended") != "complete":
            reasons.append(f"{_name(c)}: records a response body; the proxy sent {a['attempt_id']} none ({a['ended']})")
        elif (found := body_difference(body, a.get("response"))) is not None:
            reasons.append(f"{_name(c)}: the recorded response is not the reply {a['attempt_id']} sent: {found}")
    if not reasons and cut:
        raise Unverifiable(
            "gap calls.response_cut: bodies recorded for replies the proxy cut short cannot be held to the witness, "
            f"which keeps each reply whole: {', '.join(cut)}"
        )
    return reasons
