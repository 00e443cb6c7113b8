"""Behavioral checks that hold the recorded history's own words to the bodies on the wire: the task each invocation
was given, and the text of each assistant turn that stands for a reply the proxy served."""

from __future__ import annotations

from typing import Any

from orchestrator.checks.bodies import first_user_message, reply_call_ids, reply_text
from orchestrator.checks.continuation import text_of
from orchestrator.checks.evidence import WITHHELD, Evidence, withheld
from orchestrator.checks.join import join_calls, loose_failures, order_pairs_beside
from orchestrator.checks.model import Kind, Unverifiable, check

__all__: list[str] = []

Attempt = dict[str, Any]


def _invocations(ev: Evidence) -> list[dict[str, Any]]:
    invs = ev.r.get("invocations")
    return [
        inv
        for inv in (invs if isinstance(invs, list) else [])
        if isinstance(inv, dict) and isinstance(inv.get("conversation"), list)
    ]


def _owned(ev: Evidence, invs: list[dict[str, Any]]) -> dict[int, list[Attempt]]:
    """Each invocation's attempts (by id() of the invocation), in arrival order: with one invocation every attempt on
    the wire (the rollout says one agent made them; ownership.* and attempts.multiset judge whether it did), with
    several the attempts its own calls pair with."""
    if len(invs) == 1:
        return {id(invs[0]): ev.w.attempts(None)}
    pairs = [*join_calls(ev).pairs, *loose_failures(ev), *order_pairs_beside(ev)]
    by_owner: dict[Any, list[Attempt]] = {}
    for c, a in pairs:
        owner = c.get("invocation_id")
        if isinstance(owner, str):
            by_owner.setdefault(owner, []).append(a)
    order = {a["attempt_id"]: n for n, a in enumerate(ev.w.attempts(None))}
    return {id(inv): sorted(by_owner.get(_own_id(inv), []), key=lambda a: order[a["attempt_id"]]) for inv in invs}


def _own_id(inv: dict[str, Any]) -> str | None:
    # An id that is not a string (invocations.identity's finding) owns nothing, and is never used as a key.
    value = inv.get("invocation_id")
    return value if isinstance(value, str) else None


def _where(inv: dict[str, Any], n: int) -> str:
    return f"invocation {inv.get('invocation_id')!r}: conversation[{n}]"


@check(
    "history.witness_task",
    kind=Kind.BEHAVIORAL,
    evidence=("E4",),
    location="$.invocations[*].conversation[?(@.role=='user')]",
    needs=("rollout", "witness"),
)
def history_witness_task(ev: Evidence) -> list[str]:
    """The first user message of each invocation's history is a task its requests on the wire carried.

    Lie caught: a task edited, shortened or replaced in the recorded history (the model was given another
    instruction than the rollout says). The recorded task must be the first user message of one of the invocation's
    model requests (with one invocation, any model request on the wire; with several, those its own calls pair
    with), or one text part of it (Claude Code sends the task beside a reminder of its own in one message). Any
    request, not only the first: a harness that begins a fresh conversation per step (SciCode) records the last
    one's prompt as its history, and after a compaction a request may begin with the summary. A history with no
    user message is history.rebuildable's finding; an invocation none of whose requests is on the wire, or a
    rollout whose histories hold no task, leaves the task unverifiable (not applicable, named).
    """
    invs = _invocations(ev)
    owned = _owned(ev, invs)
    reasons: list[str] = []
    judged = 0
    unheld: list[str] = []
    for inv in invs:
        first = next(((n, m) for n, m in enumerate(inv["conversation"]) if _role(m) == "user"), None)
        if first is None:
            continue
        n, message = first
        requests = [a for a in owned[id(inv)] if a.get("kind") == "model"]
        bodies = [a for a in requests if isinstance(a.get("request"), dict) or withheld(a, "request")]
        if not bodies:
            why = "none of its requests is on the wire" if not requests else "none of its requests has a JSON body"
            unheld.append(f"invocation {inv.get('invocation_id')!r}: {why}")
            continue
        judged += 1
        recorded = text_of(message.get("content"))
        tasks = (first_user_message(a.get("request")) for a in bodies)
        if recorded is not None and any(p is not None and recorded in ("".join(p), *p) for p in tasks):
            continue
        hidden = [a["attempt_id"] for a in bodies if withheld(a, "request")]
        if hidden:
            reasons.append(
                f"{_where(inv, n)}: the task is not the first user message of any request held whole; "
                f"{', '.join(hidden[:3])} cannot be compared: {WITHHELD}"
            )
            continue
        sent = first_user_message(bodies[0].get("request"))
        carried = "no user message" if sent is None else _short("".join(sent))
        reasons.append(
            f"{_where(inv, n)} records the task {_short(recorded)}; the invocation's first request "
            f"({bodies[0]['attempt_id']}) carried {carried}, and none of its {len(bodies)} requests began with the "
            "recorded one"
        )
    if not judged and not reasons:
        raise Unverifiable(
            "gap history.task_unjoined: "
            + ("; ".join(unheld) if unheld else "no invocation's history records a user message (the task)")
        )
    return reasons


def _role(m: Any) -> Any:
    return m.get("role") if isinstance(m, dict) else None


def _served(a: Attempt) -> bool:
    """A reply delivered whole with a 2xx and a body (the proxy renders one for every reply it serves)."""
    status = a.get("status")
    return (
        a.get("ended") == "complete"
        and type(status) is int
        and 200 <= status < 300
        and isinstance(a.get("response"), dict)
    )


def _issued(ev: Evidence) -> dict[str, Attempt]:
    """Tool-call id -> the served reply whose body issued it (any tool: the shell's, or a finish or result tool)."""
    issued: dict[str, Attempt] = {}
    for a in ev.w.attempts(None):
        if _served(a):
            for call_id in reply_call_ids(a.get("response"), a.get("protocol")):
                issued.setdefault(call_id, a)
    return issued


@check(
    "history.witness_text",
    kind=Kind.BEHAVIORAL,
    evidence=("E4",),
    location="$.invocations[*].conversation[?(@.role=='assistant')].content",
    needs=("rollout", "witness"),
)
def history_witness_text(ev: Evidence) -> list[str]:
    """Each assistant turn of the history that stands for a reply the proxy served says what that reply said.

    Lie caught: assistant text edited, added or dropped in the recorded history (a final answer reworded, a
    keystroke batch or code block changed, words put into a tool-calling turn whose reply carried none). A turn is
    joined to its reply by the tool-call ids it holds (the reply whose body issued them); turns holding no tool
    call are joined in order with the served replies that issued none, when they are exactly as many (the model
    replies, or those with the side replies a harness may keep, such as OpenCode's summary). A turn whose tool
    calls no reply issued (a harness's own prefill), or one marked `origin: harness`, claims no served reply and is
    left to the question of turns a harness wrote itself (history.harness_authored), as is an unmarked turn saying
    what no reply said where leaving it out makes the turns as many as the model replies. Where no turn can be
    joined (counts differ), or the history records no assistant turn while replies were served (SciCode), the text
    is unverifiable: not applicable, the turns named.
    """
    issued = _issued(ev)
    invs = _invocations(ev)
    owned = _owned(ev, invs)
    # A reply whose one call the model could not form is no text-only reply, though its body shows no call: Gemini
    # sends none it could not parse (MALFORMED_FUNCTION_CALL), and a harness that throws such a reply away keeps no
    # turn of it.
    dropped = {c.get("attempt_id") for c in ev.w.malformed_calls() if c.get("not_sent")}
    reasons: list[str] = []
    judged = 0
    unjoined: list[str] = []
    for inv in invs:
        # A turn marked origin: harness claims no served reply; whether the provider served it after all is
        # history.harness_authored's question.
        turns = [
            (n, m)
            for n, m in enumerate(inv["conversation"])
            if _role(m) == "assistant" and not (isinstance(m, dict) and m.get("origin") == "harness")
        ]
        text_only: list[tuple[int, dict[str, Any]]] = []
        for n, m in turns:
            calls = m.get("tool_calls")
            ids = [tc.get("tool_call_id") for tc in calls if isinstance(tc, dict)] if isinstance(calls, list) else []
            if not ids:
                text_only.append((n, m))
                continue
            replies = {id(issued[i]): issued[i] for i in ids if isinstance(i, str) and i in issued}
            if not replies:
                continue  # tool calls no reply issued: a turn the harness wrote itself, not a served reply
            if len(replies) > 1:
                unjoined.append(f"{_where(inv, n)} holds tool calls of {len(replies)} replies")
                continue
            judged += 1
            reasons += _compare(inv, n, m, next(iter(replies.values())))
        served = [
            a
            for a in owned[id(inv)]
            if _served(a)
            and a.get("attempt_id") not in dropped
            and not reply_call_ids(a.get("response"), a.get("protocol"))
        ]
        model = [a for a in served if a.get("kind") == "model"]
        if text_only and len(text_only) != len(model):
            # Turns saying what no served reply said, unmarked, are the harness's own (history.harness_authored's
            # finding); when leaving them out makes the turns exactly as many as the model replies, the rest join.
            said = {reply_text(a.get("response"), a.get("protocol")) for a in served}
            rest = [(n, m) for n, m in text_only if _text(m) in said]
            if len(rest) == len(model) < len(text_only):
                text_only = rest
        pairs = model if len(model) == len(text_only) else served if len(served) == len(text_only) else None
        if pairs is None:
            if text_only:
                at = ", ".join(f"[{n}]" for n, _ in text_only[:5]) + (", ..." if len(text_only) > 5 else "")
                unjoined.append(
                    f"invocation {inv.get('invocation_id')!r}: {len(text_only)} turns without tool calls "
                    f"(conversation{at}) against {len(model)} served model replies without any "
                    f"({len(served)} with side replies): which turn stands for which reply is a guess"
                )
            elif not turns:
                every = sum(1 for a in owned[id(inv)] if _served(a) and a.get("kind") == "model")
                unjoined.append(
                    f"invocation {inv.get('invocation_id')!r}: its history records no assistant turn; "
                    f"{every} model replies were served whole"
                )
            continue
        for (n, m), a in zip(text_only, pairs, strict=True):
            judged += 1
            reasons += _compare(inv, n, m, a)
    if reasons:
        return reasons
    if unjoined:
        raise Unverifiable("gap history.replies_unjoined: " + "; ".join(unjoined))
    if not judged:
        raise Unverifiable("no assistant turn of the history stands for a reply served whole: no text to compare")
    return []


def _text(m: dict[str, Any]) -> str | None:
    """The turn's text: "" for no content, None for content that is not text."""
    content = m.get("content")
    return "" if content is None else text_of(content)


def _compare(inv: dict[str, Any], n: int, m: dict[str, Any], a: Attempt) -> list[str]:
    # Replies are never withheld from the witness (only requests and tool outputs are, past its budget).
    recorded = _text(m)
    sent = reply_text(a.get("response"), a.get("protocol"))
    if recorded == sent:
        return []
    return [f"{_where(inv, n)} records the text {_short(recorded)}; the reply {a['attempt_id']} said {_short(sent)}"]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."
