"""Where a tool record says its call was requested (its step), held to the step whose call issued it."""

from __future__ import annotations

from itertools import chain, repeat
from operator import itemgetter
from typing import Any

from orchestrator.checks.evidence import Evidence
from orchestrator.checks.join import certain_pairs, column, decided, dicts

__all__ = ["tool_step_reasons"]

Place = tuple[Any, Any]  # (invocation_id, step_no) of a recorded step


def tool_step_reasons(ev: Evidence) -> list[str]:
    """Each tool record's step_no (with its invocation, where it names one) against the step that records the call
    whose reply issued the tool call: the call the join pairs for certain with the attempt whose reply carried the
    tool call's id. A record with no step_no (the schema lets it be unknown), or a call the join cannot name for
    certain, is not judged."""
    if decided(lambda: _all_placed(ev)):
        return []
    places: dict[str, list[Place]] = {}
    for st in dicts(ev.r.get("steps")):
        refs = st.get("model_call_refs")
        for ref in refs if isinstance(refs, list) else ():
            if isinstance(ref, str):
                places.setdefault(ref, []).append((st.get("invocation_id"), st.get("step_no")))
    # The call whose reply issued each tool call id; the first wins, as the wire issues an id once.
    issuer: dict[Any, Any] = {}
    for c, a in certain_pairs(ev):
        for cid in a.get("tool_call_ids") or ():
            issuer.setdefault(cid, c.get("model_call_id"))
    tools = dicts(ev.r.get("tool_calls"))
    ids = column(tools, "tool_call_id")
    # Hashable ids only (a hostile record's id may be an object): a call id the wire issued is a string.
    names = [issuer.get(cid) if isinstance(cid, str) else None for cid in ids]
    wanted = [places.get(name) if isinstance(name, str) else None for name in names]
    given = list(zip(column(tools, "invocation_id"), column(tools, "step_no"), strict=True))
    reasons = []
    for cid, name, want, (iid, n) in zip(ids, names, wanted, given, strict=True):
        if want is None or n is None:
            continue
        # Compared as JSON values: step 1 is not `true`, and a step number of another type names no step.
        if not any(_same(n, no) and (iid is None or _same(iid, inv)) for inv, no in want):
            held = ", ".join(f"step {no!r} of {inv!r}" for inv, no in want)
            reasons.append(
                f"tool {cid}: step_no {n!r} of {iid!r}, but the reply that issued it answered call {name}, which is "
                f"recorded in {held}"
            )
    return reasons


def _all_placed(ev: Evidence) -> bool:
    """The honest case at once, in C: the steps hold the calls paired for certain, in order, one step each, and the
    tool records are the ids those calls' replies issued, in order, each in its issuing call's step (integers as
    integers). Anything else is left to the full reading."""
    steps, tools = ev.r["steps"], ev.r["tool_calls"]
    refs = column(steps, "model_call_refs")
    pairs = certain_pairs(ev)
    if list(chain.from_iterable(refs)) != column(list(map(itemgetter(0), pairs)), "model_call_id"):
        return False
    issued = column(list(map(itemgetter(1), pairs)), "tool_call_ids")
    per_call = list(map(len, issued))

    def each_tool(field: str) -> list[Any]:
        # The step's value, once per call it holds, then once per tool call that call's reply issued.
        per_ref = chain.from_iterable(map(repeat, column(steps, field), map(len, refs)))
        return list(chain.from_iterable(map(repeat, per_ref, per_call)))

    # Integers and strings only, on both sides: `==` is then the full reading's type-exact comparison (1 == 1.0 ==
    # true would let a step numbered 1.0 pass here and fail there).
    nos, invs = column(tools, "step_no"), column(tools, "invocation_id")
    step_nos, step_invs = column(steps, "step_no"), column(steps, "invocation_id")
    return (
        set(map(type, nos)) | set(map(type, step_nos)) <= {int}
        and set(map(type, invs)) | set(map(type, step_invs)) <= {str}
        and list(chain.from_iterable(issued)) == column(tools, "tool_call_id")
        and each_tool("step_no") == nos
        and each_tool("invocation_id") == invs
    )


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b
