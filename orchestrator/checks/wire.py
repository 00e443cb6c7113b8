"""Behavioral checks that hold recorded facts to the exchange on the wire: status, category, request, times, order."""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from operator import itemgetter, methodcaller
from typing import Any

from orchestrator.checks import looks
from orchestrator.checks.categories import category_reason
from orchestrator.checks.continuation import history_call_mismatches, ownership_breaks, text_of
from orchestrator.checks.evidence import WITHHELD, Evidence, withheld
from orchestrator.checks.join import (
    Join,
    Key,
    all_ok,
    attempt_column,
    attempt_keys,
    call_column,
    dicts,
    held_pairs,
    join_calls,
    loose_failures,
)
from orchestrator.checks.model import Kind, Unverifiable, check
from orchestrator.checks.placement import tool_step_reasons
from orchestrator.checks.times import TimeCache

__all__ = ["CLOCK_TOLERANCE", "EARLY_START_LIMIT"]

# Harness and proxy share the host clock, so the witness's times bound the recorded ones. Harnesses write times at
# millisecond or whole-second resolution and take them just before sending / just after parsing: one second either
# side absorbs that. A call recorded as starting more than EARLY_START_LIMIT before its request reached the proxy
# is not the start of that attempt (it is an earlier attempt's, or invented): nothing between a harness's clock
# read and its send (connect, TLS to a local proxy) takes that long in a probe pod.
CLOCK_TOLERANCE = timedelta(seconds=1)
EARLY_START_LIMIT = timedelta(seconds=30)


def _name(c: dict[str, Any]) -> str:
    return str(c.get("model_call_id"))


def _same_request(recorded: Any, attempt: dict[str, Any]) -> bool:
    if isinstance(recorded, str):
        if hashlib.sha256(recorded.encode()).hexdigest() == attempt.get("request_sha256"):
            return True
        try:
            recorded = json.loads(recorded)
        except json.JSONDecodeError:
            return False
    return attempt.get("request") is not None and recorded == attempt["request"]


@check(
    "attempts.exchange",
    kind=Kind.BEHAVIORAL,
    evidence=("E1", "E7"),
    location="$.model_calls[*]",
    needs=("rollout", "witness"),
)
def attempts_exchange(ev: Evidence) -> list[str]:
    """Each recorded call is the whole exchange of its witnessed attempt, in the order the wire saw them.

    Lies caught: a success's status changed to another 2xx (200 -> 201); a failed attempt's protocol changed; a
    response id or finish reason on a failed call; an error category the reply contradicts (`http_500` for a
    429, `timeout` for a complete 429, `http_429` for a withheld reply, `connection` or `stream_cut` for a reply
    withheld until the harness timed out, which the scenario scripted as a timeout); a recorded request that is
    not the one sent; and calls recorded in another order than the wire's (two successes' response ids swapped).
    A failure recorded without the status that would join it is still paired, in order, with a failed attempt
    left over (when their numbers agree), so its protocol, category and request are judged on their own.
    A category of the harness's own naming (`no_reply`, `api_error`) claims no way of ending and is not judged.
    """
    joined = join_calls(ev)
    if _whole_exchanges(ev, joined):
        return []
    reasons = []
    loose = loose_failures(ev)
    pairs = [*zip(joined.pairs, joined.keys, strict=True), *((p, ("loose", None)) for p in loose)]
    for (c, a), joined_key in pairs:
        status, sent = c.get("status_code"), a.get("status")
        complete = a.get("ended") == "complete"
        # A loose pair records no status that joins (so it was paired in order): that absence is multiset's finding.
        if joined_key[0] != "loose" and complete and status != sent:
            reasons.append(f"{_name(c)}: status_code {status!r}, the wire answered {sent!r}")
        elif joined_key[0] != "loose" and not complete and status is not None and status != sent:
            reasons.append(f"{_name(c)}: status_code {status!r}, the wire's reply ({a.get('ended')}) had {sent!r}")
        if joined_key[0] != "ok":  # the pair's key is its call's rollout_key (or loose: a failure paired in order)
            # A success's protocol and finish reason are calls.response_metadata's; a failure's are judged here.
            if c.get("protocol") != a.get("protocol"):
                reasons.append(f"{_name(c)}: protocol {c.get('protocol')!r}, the request used {a.get('protocol')!r}")
            for key in ("response_id", "finish_reason"):
                if c.get(key) is not None:
                    reasons.append(f"{_name(c)}: a failed attempt records {key} {c.get(key)!r}; the wire sent none")
            why = category_reason(c, a)
            if why:
                reasons.append(why)
        if c.get("request") is not None and not _same_request(c["request"], a):
            if withheld(a, "request"):
                reasons.append(f"{_name(c)}: the request {a['attempt_id']} sent cannot be compared: {WITHHELD}")
            else:
                reasons.append(f"{_name(c)}: the recorded request is not the one {a['attempt_id']} sent")
    for c, a in joined.out_of_order:
        reasons.append(f"{_name(c)}: recorded after calls the wire saw later than {a['attempt_id']}")
    return reasons


def _whole_exchanges(ev: Evidence, joined: Join) -> bool:
    """Whether attempts.exchange finds nothing, looked at a column at a time: every call a success paired with the
    attempt at its position, which completed with the status recorded, and no call recording a request."""
    if not (joined.positional and all_ok(joined.keys)):
        return False
    ended = attempt_column(ev, "ended")
    return (
        ended.count("complete") == len(ended)
        and call_column(ev, "status_code") == attempt_column(ev, "status")
        and call_column(ev, "request").count(None) == len(ended)
    )


@check(
    "calls.witness_times",
    kind=Kind.BEHAVIORAL,
    evidence=("E1",),
    location="$.model_calls[*].started_at",
    needs=("rollout", "witness"),
    depends_on=("calls.timing",),
)
def calls_witness_times(ev: Evidence) -> list[str]:
    """Each call's recorded times fit its attempt on the wire (shared clock, 1 s tolerance, start at most 30 s early).

    Lies caught: a call recorded as starting after the proxy had already answered it, or completing before its
    request arrived, or starting long before its request arrived; well-formed, ordered times that are not the
    attempt's own. A harness that keeps no response ids (NOOA, OpenCode) has its successes' times held to the
    replies the order join pairs them with; where it records its summarization calls among its successes, the
    others are paired in order with the policy replies when their numbers agree, and where no pairing is
    evidence the check fails: times compared with nothing are not times that fit.
    """
    times = TimeCache()
    parse = times.parse
    if looks.calls_inside_attempts(ev, parse):
        return []
    reasons = []
    pairs, unheld = held_pairs(ev)
    if unheld:
        reasons.append(f"{unheld}, so their recorded times are held to no attempt")
    for c, a in pairs:
        start, end = parse(c.get("started_at")), parse(c.get("completed_at"))
        sent, answered = parse(a.get("started_at")), parse(a.get("completed_at"))
        if start is None or end is None or sent is None or answered is None:
            continue  # calls.timing names malformed recorded times; witness times are schema-checked
        if start <= answered and end >= sent and start >= sent:
            continue  # the common case: the call inside its attempt, no tolerance needed
        if start > answered + CLOCK_TOLERANCE:
            reasons.append(f"{_name(c)}: started_at {c['started_at']} after the proxy answered at {a['completed_at']}")
        if end < sent - CLOCK_TOLERANCE:
            reasons.append(
                f"{_name(c)}: completed_at {c['completed_at']} before its request arrived at {a['started_at']}"
            )
        if start < sent - EARLY_START_LIMIT:
            reasons.append(
                f"{_name(c)}: started_at {c['started_at']} more than {EARLY_START_LIMIT.seconds} s before its "
                f"request arrived at {a['started_at']}"
            )
    return reasons


@check(
    "history.witness_results",
    kind=Kind.BEHAVIORAL,
    evidence=("E4",),
    location="$.invocations[*].conversation[?(@.role=='tool')].content",
    needs=("rollout", "witness"),
    depends_on=("history.rebuildable", "witness.results_seen"),
    scope=("tools", "tool_results"),
)
def history_witness_results(ev: Evidence) -> list[str]:
    """Each tool result in the recorded history is what the model saw on the wire as that call's result.

    Lie caught: a tool result edited only in the conversation history (the tool record keeps the true output,
    the history the rollout says the model saw does not match the request bodies the proxy received); and a
    tool call whose arguments the history records otherwise than the reply that issued it sent.
    Not applicable where no result ever goes back to the model (scope `tool_results`, SciCode).
    """
    reasons = history_call_mismatches(ev)
    results_seen = ev.w.results_seen
    for inv in dicts(ev.r.get("invocations")):
        conversation = inv.get("conversation")
        for n, m in enumerate(conversation if isinstance(conversation, list) else []):
            if not isinstance(m, dict) or m.get("role") != "tool":
                continue
            results = results_seen(str(m.get("tool_call_id")))
            if not results:
                continue  # a result the wire never carried is witness.results_seen's finding
            content = m.get("content")
            text = content if isinstance(content, str) else text_of(content)
            if len(results) == 1 and text == results[0]["output"] and text is not None:
                continue  # the common case: seen once, as recorded
            if any(withheld(s, "output") for s in results):
                reasons.append(
                    f"invocation {inv.get('invocation_id')}: conversation[{n}]: the result the model saw for "
                    f"{m.get('tool_call_id')!r} cannot be compared: {WITHHELD}"
                )
                continue
            seen = {s["output"] for s in results}
            if text not in seen:
                reasons.append(
                    f"invocation {inv.get('invocation_id')}: conversation[{n}] gives {m.get('tool_call_id')!r} "
                    f"the result {text!r}, the model saw {sorted(seen)!r}"
                )
    return reasons


# Request headers that carry a harness's session id, most specific first (the witness keeps them verbatim).
SESSION_HEADERS = ("x-claude-code-session-id", "session-id", "session_id", "x-session-id", "x-session-affinity")


def _session(a: dict[str, Any]) -> str | None:
    headers = a.get("headers")
    if not headers:
        return None
    for name in SESSION_HEADERS:
        if headers.get(name):
            return f"{name}: {headers[name]}"
    return None


@check(
    "ownership.wire_sessions",
    kind=Kind.BEHAVIORAL,
    evidence=("E8",),
    location="$.model_calls[*].invocation_id",
    needs=("rollout", "witness"),
    depends_on=("ownership.call_owner",),
)
def ownership_wire_sessions(ev: Evidence) -> list[str]:
    """Calls are owned by invocations exactly as the wire groups their attempts: by the harness's session header,
    and by which requests continue which conversation.

    Lie caught: a call, or a whole step, moved to another invocation consistently (its owner field and the
    invocations' references agree with each other, not with the wire); retries and failed attempts included. A
    request whose history carries the result of a tool call a scripted reply issued continues that reply's
    conversation, so the two calls have one owner: that needs no header, and holds on every harness that sends
    tool results back. A harness that sends no session header and whose requests split no conversation between
    owners leaves the rest unverifiable (a conversation begun afresh could be any invocation's): not applicable
    with the gap named, never a pass.
    """
    pairs = join_calls(ev).pairs
    split = ownership_breaks(ev, pairs)
    if not any(_session(a) for a in ev.w.attempts(None)):
        if split:
            return split
        raise Unverifiable(
            "gap ownership.wire_session_unsent: the harness sends no session header "
            f"({', '.join(SESSION_HEADERS)}), so its ownership cannot be held to the wire"
        )
    by_session: dict[str | None, set[Any]] = {}
    by_owner: dict[Any, set[str | None]] = {}
    for c, a in pairs:
        session = _session(a)
        by_session.setdefault(session, set()).add(c.get("invocation_id"))
        by_owner.setdefault(c.get("invocation_id"), set()).add(session)
    reasons = [
        f"attempts of one wire session ({session or 'no session header'}) are owned by {len(owners)} invocations: "
        f"{sorted(map(str, owners))}"
        for session, owners in by_session.items()
        if len(owners) > 1
    ]
    reasons += [
        f"invocation {owner!r} owns attempts of {len(sessions)} wire sessions: {sorted(map(str, sessions))}"
        for owner, sessions in by_owner.items()
        if len(sessions) > 1
    ]
    return reasons + split


_ATTEMPT_ID = itemgetter("attempt_id")
_CALL_ID = methodcaller("get", "model_call_id")
_FIRST, _SECOND = itemgetter(0), itemgetter(1)


def _in_wire_order(joined: Join, model: list[dict[str, Any]], ordered: list[dict[str, Any]]) -> bool:
    """Whether the steps, read in order, reference the calls of the model attempts in the wire's order, each once:
    true of an honest rollout whose calls pair with the attempts by position (every attempt a model attempt)."""
    if not joined.positional or len(model) != len(joined.pairs):
        return False
    called = [c.get("model_call_id") for c, _ in joined.pairs]
    if not set(map(type, called)) <= {str} or len(set(called)) != len(called):
        return False
    return [ref for s in ordered for ref in s.get("model_call_refs") or []] == called


def _groups(ids: list[str], keys: list[Key]) -> list[list[str]]:
    """The wire's steps: the failed attempts retried before a reply, with that reply."""
    groups: list[list[str]] = [[]]
    for attempt_id, key in zip(ids, keys, strict=True):
        groups[-1].append(attempt_id)
        if key[0] == "ok":
            groups.append([])
    return [g for g in groups if g]


@check(
    "steps.witness_attempts",
    kind=Kind.BEHAVIORAL,
    evidence=("E9",),
    location="$.steps[*].model_call_refs",
    needs=("rollout", "witness"),
    depends_on=("steps.call_refs", "steps.attempt_accounting", "attempts.exchange", "ownership.wire_sessions"),
    scope=("steps",),
)
def steps_witness_attempts(ev: Evidence) -> list[str]:
    """One step per scripted reply, each holding that reply's attempt and the failed attempts retried before it, and
    each tool call the reply issued recorded in that step (where its record gives a step_no).

    Steps are compared with the wire attempt by attempt, not only by size: two steps whose contents were swapped
    (numbers still in order, attempts not) fail, as does a retry placed in the step after its success. It reads
    the join of calls to attempts, so it depends on attempts.exchange having found that join in the wire's order,
    and it reads the steps of all invocations as one sequence, so it depends on the ownership the wire shows.
    """
    model, keys = ev.w.attempts("model"), attempt_keys(ev, "model")
    ids = list(map(_ATTEMPT_ID, model))
    groups: list[list[str]] | None = None
    if {key[0] for key in keys} <= {"ok"}:
        sizes = [1] * len(ids)  # every attempt a success: each its own step
    else:
        groups = _groups(ids, keys)
        sizes = [len(g) for g in groups]
    joined = join_calls(ev)
    steps = ev.r.get("steps")
    ordered = sorted(
        (s for s in (steps if isinstance(steps, list) else []) if isinstance(s, dict)),
        key=lambda s: s.get("step_no", 0),
    )
    recorded = [len(s.get("model_call_refs") or []) for s in ordered]
    if recorded != sizes:
        return [
            f"attempts per step recorded {recorded}, witnessed {sizes} (a step = retries + the reply that ended them)"
        ]
    reasons: list[str] = []
    # Steps that reference the wire's calls in its order hold exactly its steps' attempts: nothing to look up.
    if not _in_wire_order(joined, model, ordered):
        pairs = joined.pairs
        attempt_of = dict(zip(map(_CALL_ID, map(_FIRST, pairs)), map(_ATTEMPT_ID, map(_SECOND, pairs)), strict=True))
        # A call the wire cannot match is attempts.multiset's finding; here only joined calls are placed.
        held_all = [attempt_of[ref] for s in ordered for ref in s.get("model_call_refs") or [] if ref in attempt_of]
        if len(held_all) != sum(recorded) or held_all != ids:
            # Not every step holds exactly its attempts: each is compared with its own.
            for n, (s, group) in enumerate(zip(ordered, groups or _groups(ids, keys), strict=True), start=1):
                held = [attempt_of[ref] for ref in s.get("model_call_refs") or [] if ref in attempt_of]
                if held != group and not set(held) <= set(group):
                    reasons.append(
                        f"step {s.get('step_no')} holds the attempts {held}, the wire's step {n} was {group}"
                    )
    # A tool record's step_no names the step whose reply requested it: a tool moved to another step (or to none).
    reasons += tool_step_reasons(ev)
    provenance = ev.r.get("provenance")
    inferred = isinstance(provenance, dict) and provenance.get("retry_placement") == "inferred"
    if not reasons and inferred and any(size > 1 for size in sizes):
        # The wire agrees with where the normalizer put the retries, but the harness never said: no credit.
        raise Unverifiable(
            "gap steps.retry_placement_inferred: the harness records failed attempts apart from its steps; the "
            "normalizer placed each in the step of the next reply, so the placement is not the harness's evidence"
        )
    return reasons
