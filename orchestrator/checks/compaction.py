"""Context compaction (P1): the wire shows the harness compacting its history, and its rollout says when and how."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from orchestrator.checks.evidence import Evidence, Witness, withheld
from orchestrator.checks.model import Kind, check

__all__ = ["Compaction", "witnessed_compactions"]

_MODEL_PATHS = ("/chat/completions", "/responses", "/messages")
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


def _result_ids(request: Any) -> set[str]:
    """Tool-call ids whose results a request's history carries, in any of the three protocols."""
    if not isinstance(request, dict):
        return set()
    ids: set[str] = set()
    for item in _dicts(request.get("messages")) + _dicts(request.get("input")):
        if item.get("role") == "tool" and isinstance(item.get("tool_call_id"), str):
            ids.add(item["tool_call_id"])  # Chat Completions
        if item.get("type") == "function_call_output" and isinstance(item.get("call_id"), str):
            ids.add(item["call_id"])  # Responses
        for block in _dicts(item.get("content")):
            if block.get("type") == "tool_result" and isinstance(block.get("tool_use_id"), str):
                ids.add(block["tool_use_id"])  # Messages
    return ids


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
        ids = _result_ids(request)
        if issued and a["kind"] == "auxiliary":
            text = json.dumps(request).lower()
            if any(word in text for word in _SUMMARY_WORDS):
                found.append(Compaction(a, True, ()))
        elif seen - ids:
            found.append(Compaction(a, False, tuple(sorted(seen - ids))))
        seen |= ids
        issued = issued or bool(a.get("tool_call_ids"))
    return found


@check(
    "compaction.recorded",
    kind=Kind.BEHAVIORAL,
    tier="P1",
    evidence=("E8", "E9"),
    location="$.compactions",
    needs=("rollout", "witness"),
    depends_on=("rollout.format",),
    scope=("compaction",),
)
def compaction_recorded(ev: Evidence) -> list[str]:
    """With usage near the context window the harness compacts, and records each compaction: its step, and the
    calls it made (owned by the compacted invocation)."""
    wire = witnessed_compactions(ev.w)
    if not wire:
        return [
            "the harness never compacted: no summarization call and no shortened history on the wire, although "
            "every reply reported prompt usage near the context window"
        ]
    records = _dicts(ev.r.get("compactions"))
    if not records:
        return [f"the wire shows compaction ({wire[0].describe()}) but the rollout records none"]
    # Ids and step numbers are looked up as keys: an object or array in their place (it depends on no schema
    # check) names nothing recorded, rather than failing the lookup.
    calls = {_key(c.get("model_call_id")): c for c in _dicts(ev.r.get("model_calls"))}
    owned = {
        _key(inv.get("invocation_id")): set(_keys(inv.get("model_call_refs")))
        for inv in _dicts(ev.r.get("invocations"))
    }
    steps = {_key(s.get("step_no")) for s in _dicts(ev.r.get("steps"))}
    reasons: list[str] = []
    named: set[str] = set()
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
            call = calls.get(_key(ref))
            if call is None:
                reasons.append(f"{where}: model call {ref!r} is not recorded")
                continue
            if _key(ref) not in owned.get(_key(rec.get("invocation_id")), set()):
                reasons.append(f"{where}: model call {ref!r} is not owned by invocation {rec.get('invocation_id')!r}")
            if isinstance(call.get("response_id"), str):
                named.add(call["response_id"])
    for c in wire:
        rid = c.attempt.get("response_id")
        if c.summarization and rid and rid not in named:
            why = "the recorded compaction calls carry no response id" if not named else "it is not among them"
            reasons.append(f"{c.describe()} (response {rid}) cannot be joined to a recorded compaction call: {why}")
    return reasons
