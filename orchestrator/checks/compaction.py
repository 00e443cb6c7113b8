"""Context compaction (P1): the wire shows the harness compacting its history, and its rollout says when and how."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from orchestrator.checks.continuation import result_ids
from orchestrator.checks.evidence import Evidence, Witness, withheld
from orchestrator.checks.join import join_calls, order_pairs_beside
from orchestrator.checks.model import Kind, check

__all__ = ["Compaction", "witnessed_compactions"]

_MODEL_PATHS = ("/chat/completions", "/responses", "/messages", ":generateContent", ":streamGenerateContent")
# A side request is taken for a summarization call only when it says so: harnesses also send other side
# requests (titles, topic checks) that are not compaction. Every compaction prompt seen names one of these.
_SUMMARY_WORDS = ("summar", "compact", "condense")


@dataclass(frozen=True)
class Compaction:
    """One piece of wire evidence that the harness compacted: a summarization call, or a shortened history."""

    attempt: dict[str, Any]
    summarization: bool
    dropped: tuple[str, ...]  # tool-call ids whose results an earlier request carried and this one does not

    def describe(self) -> str:
        if self.summarization:
            return f"summarization call {self.attempt['attempt_id']}"
        return f"{self.attempt['attempt_id']} dropped the results of {', '.join(self.dropped)} from its history"


class _Unhashable:
    """Where an object or array stands in a key's place: equal to nothing, not even another of its kind."""


def _key(value: Any) -> Any:
    return _Unhashable() if isinstance(value, (dict, list)) else value


def _keys(value: Any) -> list[Any]:
    return [_key(v) for v in value] if isinstance(value, list) else []


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [x for x in value if isinstance(x, dict)] if isinstance(value, list) else []


def _model_route(attempt: dict[str, Any]) -> bool:
    path = str(attempt.get("path") or "").split("?", 1)[0].rstrip("/")
    return attempt.get("method") == "POST" and path.endswith(_MODEL_PATHS)


def witnessed_compactions(w: Witness) -> list[Compaction]:
    """Compaction as it crossed the wire, in arrival order.

    Once a tool call has been issued, a summarization side request (some harnesses summarize before they ever
    send the result back: OpenCode), or any request whose history no longer carries a result an earlier request
    carried, shows that the harness compacted.
    """
    found: list[Compaction] = []
    seen: set[str] = set()
    issued = False
    for a in w.attempts(None):
        if not _model_route(a):
            continue
        if withheld(a, "request"):
            continue  # a body the witness keeps as size and sha256 only shows nothing of the history either way
        request = a.get("request")
        ids = result_ids(request)
        if issued and a["kind"] == "auxiliary":
            text = json.dumps(request).lower()
            if any(word in text for word in _SUMMARY_WORDS):
                found.append(Compaction(a, True, ()))
        elif seen - ids:
            found.append(Compaction(a, False, tuple(sorted(seen - ids))))
        seen |= ids
        issued = issued or bool(a.get("tool_call_ids"))
    return found


def _records_compaction(ev: Evidence) -> bool:
    """when the rollout records a compaction (whatever the scenario: the wire must then show it)."""
    rollout = ev.rollout
    return isinstance(rollout, dict) and "compactions" in rollout and rollout["compactions"] != []


@check(
    "compaction.recorded",
    kind=Kind.BEHAVIORAL,
    tier="P1",
    evidence=("E8", "E9"),
    location="$.compactions",
    needs=("rollout", "witness"),
    depends_on=("rollout.format",),
    scope=("compaction",),
    claims=_records_compaction,
)
def compaction_recorded(ev: Evidence) -> list[str]:
    """With usage near the context window the harness compacts, and records each compaction: its step, and the
    calls it made (owned by the compacted invocation).

    Each record is held to the wire, in every scenario: its calls must be summarization calls the wire shows
    (joined by response id), each claimed by one record; its step must be the one whose policy call followed the
    compaction on the wire. Lies caught: a record moved to another step, two records trading their calls, an extra
    record where the wire shows no summarization and no shortened history, and a compaction invented in a scenario
    that never provoked one.
    """
    wire = witnessed_compactions(ev.w)
    in_scope = ev.scenario.get("scope", {}).get("compaction", False) is True
    if not wire and in_scope:
        return [
            "the harness never compacted: no summarization call and no shortened history on the wire, although "
            "every reply reported prompt usage near the context window"
        ]
    value = ev.r.get("compactions")
    if value is not None and not isinstance(value, list):
        return [f"compactions {value!r} is not an array of compaction records"]
    records = _dicts(value)
    if not records:
        return [f"the wire shows compaction ({wire[0].describe()}) but the rollout records none"] if wire else []
    reasons = [
        f"compactions[{i}] {rec!r} is not a compaction record"
        for i, rec in enumerate(value or [])
        if not isinstance(rec, dict)
    ]
    return reasons + _resolved(ev, records) + _held_to_wire(ev, records, wire)


def _resolved(ev: Evidence, records: list[dict[str, Any]]) -> list[str]:
    """Each record names a recorded step and invocation, and calls recorded and owned by that invocation."""
    # Ids and step numbers are looked up as keys: an object or array in their place (it depends on no schema
    # check) names nothing recorded, rather than failing the lookup.
    calls = {_key(c.get("model_call_id")) for c in _dicts(ev.r.get("model_calls"))}
    owned = {
        _key(inv.get("invocation_id")): set(_keys(inv.get("model_call_refs")))
        for inv in _dicts(ev.r.get("invocations"))
    }
    steps = {_key(s.get("step_no")) for s in _dicts(ev.r.get("steps"))}
    reasons: list[str] = []
    for i, rec in enumerate(records):
        where = f"compactions[{i}]"
        if _key(rec.get("step_no")) not in steps:
            reasons.append(f"{where}: step_no {rec.get('step_no')!r} is not a recorded step")
        if _key(rec.get("invocation_id")) not in owned:
            reasons.append(f"{where}: invocation_id {rec.get('invocation_id')!r} is not a recorded invocation")
        refs = rec.get("model_call_refs")
        if not isinstance(refs, list):
            reasons.append(f"{where}: model_call_refs {refs!r} is not an array of call ids")
            refs = []
        for ref in refs:
            if _key(ref) not in calls:
                reasons.append(f"{where}: model call {ref!r} is not recorded")
            elif _key(ref) not in owned.get(_key(rec.get("invocation_id")), set()):
                reasons.append(f"{where}: model call {ref!r} is not owned by invocation {rec.get('invocation_id')!r}")
    return reasons


Place = tuple[Any, Any]  # (invocation_id, step_no) of a recorded step, as keys


def _places(ev: Evidence, wire: list[Compaction]) -> list[Place | None]:
    """The recorded step of each wire compaction: the step holding the call joined to the first policy attempt at
    or after it (a compaction happens before its step's policy call); None where no recorded step holds that call."""
    step_of: dict[Any, Place] = {}
    for s in _dicts(ev.r.get("steps")):
        for ref in _keys(s.get("model_call_refs")):
            step_of.setdefault(ref, (_key(s.get("invocation_id")), _key(s.get("step_no"))))
    call_of = _call_of(ev)
    attempts = ev.w.attempts(None)
    index = {id(a): n for n, a in enumerate(attempts)}
    out: list[Place | None] = []
    for c in wire:
        policy = next((a for a in attempts[index[id(c.attempt)] :] if a["kind"] == "model"), None)
        call = call_of.get(id(policy)) if policy is not None else None
        out.append(step_of.get(_key(call.get("model_call_id"))) if call is not None else None)
    return out


def _call_of(ev: Evidence) -> dict[int, dict[str, Any]]:
    """The recorded call of each joined attempt (by the attempt's id()). A harness that keeps no response ids and
    records its summarization calls has more successes than the wire has policy replies, so the order join pairs
    none of them; for placing a compaction its successes other than the calls compaction records name are paired,
    in order, with the policy replies, when their numbers agree (the order join's own premise)."""
    joined = join_calls(ev)
    call_of = {id(a): c for c, a in joined.pairs}
    call_of.update((id(a), c) for c, a in order_pairs_beside(ev))
    return call_of


def _firsts(wire: list[Compaction]) -> list[Compaction]:
    """The evidence of each compaction once: every request after a drop lacks the dropped results again, and only
    the first request to lack a result shows the compaction that dropped it."""
    gone: set[str] = set()
    out = []
    for c in wire:
        if c.summarization or set(c.dropped) - gone:
            out.append(c)
        gone.update(c.dropped)
    return out


def _step(place: Place) -> str:
    return repr(place[1])


def _held_to_wire(ev: Evidence, records: list[dict[str, Any]], wire: list[Compaction]) -> list[str]:
    """Each record is a compaction the wire shows, at the step where the wire shows it, claiming its own calls."""
    calls = {_key(c.get("model_call_id")): c for c in _dicts(ev.r.get("model_calls"))}
    wire = _firsts(wire)
    places = _places(ev, wire)
    summaries = {
        c.attempt["response_id"]: (c, at)
        for c, at in zip(wire, places, strict=True)
        if c.summarization and isinstance(c.attempt.get("response_id"), str)
    }
    summarized = any(c.summarization for c in wire)
    placed = {at for at in places if at is not None}
    reasons: list[str] = []
    claimed: dict[str, list[int]] = {}
    named: set[str] = set()
    at_step: dict[Place, list[int]] = {}
    for i, rec in enumerate(records):
        where = f"compactions[{i}]"
        place = (_key(rec.get("invocation_id")), _key(rec.get("step_no")))
        at_step.setdefault(place, []).append(i)
        refs = rec.get("model_call_refs")
        own = 0
        for ref in refs if isinstance(refs, list) else []:
            call = calls.get(_key(ref))
            if call is None:
                continue  # named by _resolved
            rid = call.get("response_id")
            if not isinstance(rid, str):
                if not summarized:
                    reasons.append(
                        f"{where}: model call {ref!r} is recorded as a compaction's call, but the wire "
                        "shows no summarization call"
                    )
                continue  # else each summarization no recorded compaction call joins is named below
            named.add(rid)
            if rid not in summaries:
                reasons.append(f"{where}: model call {ref!r} (response {rid}) is not a summarization call on the wire")
                continue
            c, at = summaries[rid]
            own += 1
            claimed.setdefault(c.attempt["attempt_id"], []).append(i)
            if at is not None and at != place:
                reasons.append(
                    f"{where}: step_no {rec.get('step_no')!r}, but its {c.describe()} came before the policy call "
                    f"of step {_step(at)}"
                )
        if own:
            continue
        if not wire:
            reasons.append(
                f"{where}: the wire shows no compaction at all (no summarization call, no shortened history)"
            )
        elif place not in placed and None not in places:
            # A compaction the join cannot place is named below (or as an unjoined summarization), once.
            where_wire = ", ".join(sorted({_step(at) for at in placed})) or "none"
            reasons.append(
                f"{where}: step_no {rec.get('step_no')!r}, but the wire shows compaction only before the policy "
                f"calls of steps {where_wire}"
            )
    for attempt_id, idx in claimed.items():
        if len(idx) > 1:
            reasons.append(
                f"{attempt_id} is claimed by {len(idx)} records: {', '.join(f'compactions[{i}]' for i in idx)}"
            )
    for place, idx in at_step.items():
        # One compaction per step, unless the wire shows more summarizations before that step's policy call.
        allowed = max(1, sum(1 for c, at in zip(wire, places, strict=True) if c.summarization and at == place))
        if wire and len(idx) > allowed and place in placed:
            reasons.append(
                f"{len(idx)} compaction records at step {_step(place)} "
                f"({', '.join(f'compactions[{i}]' for i in idx)}); the wire shows {allowed} there"
            )
    for c, at in zip(wire, places, strict=True):
        rid = c.attempt.get("response_id")
        if c.summarization and rid and rid not in named:
            why = "the recorded compaction calls carry no response id" if not named else "it is not among them"
            reasons.append(f"{c.describe()} (response {rid}) cannot be joined to a recorded compaction call: {why}")
        elif at is None:
            reasons.append(f"{c.describe()} cannot be placed in a recorded step: the policy call after it joins none")
        elif at not in at_step and not c.summarization:
            reasons.append(f"{c.describe()}, before the policy call of step {_step(at)}, is recorded by no compaction")
    return reasons
