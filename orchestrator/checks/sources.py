"""A harness with two records of one run (Gemini CLI's chat recording and its OpenTelemetry file): what the second
says of a fact must be what the rollout holds."""

from __future__ import annotations

import json
from typing import Any

from orchestrator.checks.evidence import Evidence
from orchestrator.checks.model import Kind, check

__all__ = ["resolve_pointer"]

_ABSENT = object()


def resolve_pointer(document: Any, pointer: str) -> Any:
    """The value at a JSON Pointer (RFC 6901) in `document`, or _ABSENT when nothing is there."""
    if pointer == "":
        return document
    if not pointer.startswith("/"):
        return _ABSENT
    node = document
    for raw in pointer[1:].split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isascii() and token.isdigit() and len(token) < 10:
            index = int(token)
            if index >= len(node) or (len(token) > 1 and token.startswith("0")):
                return _ABSENT
            node = node[index]
        else:
            return _ABSENT
    return node


def _source_of(facts: dict[str, Any], pointer: str) -> str | None:
    """The source the rollout names for a fact: that of the longest pointer in `facts` that is a prefix of it."""
    best: str | None = None
    for prefix, source in facts.items():
        if not isinstance(prefix, str) or not isinstance(source, str):
            continue
        if (pointer == prefix or pointer.startswith(prefix + "/") or prefix == "") and (
            best is None or len(prefix) > len(best)
        ):
            best = prefix
    return facts[best] if best is not None else None


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= 200 else text[:200] + "..."


def _corroborates(ev: Evidence) -> bool:
    """when the rollout says what another of the harness's records says of its facts (`provenance.corroboration`)."""
    provenance = ev.rollout.get("provenance") if isinstance(ev.rollout, dict) else None
    return isinstance(provenance, dict) and bool(provenance.get("corroboration"))


@check(
    "sources.agree",
    kind=Kind.SEMANTIC,
    tier="P1",
    evidence=("E1", "E2", "E5", "E6"),
    location="$.provenance.corroboration",
    needs=("rollout",),
    depends_on=("rollout.format",),
    scope=("second_source",),
    claims=_corroborates,
)
def sources_agree(ev: Evidence) -> list[str]:
    """Where the harness keeps two records of its run, each fact the second records is the one the rollout holds
    (read from the first): the same tokens, tool calls, statuses and answer in both.

    Lies caught: two records of one harness that contradict each other (one of them, at least, is not what
    happened; the wire checks say which), a fact one record has that the other leaves out, and a corroboration
    naming a source the rollout does not list.
    """
    provenance = ev.r.get("provenance")
    if not isinstance(provenance, dict):
        return []
    raw_sources, raw_facts = provenance.get("sources"), provenance.get("facts")
    sources: dict[str, Any] = raw_sources if isinstance(raw_sources, dict) else {}
    facts: dict[str, Any] = raw_facts if isinstance(raw_facts, dict) else {}
    reasons = [
        f"provenance.facts names a source {s!r} not in provenance.sources" for s in set(facts.values()) - set(sources)
    ]
    for n, entry in enumerate(provenance.get("corroboration") or []):
        if not isinstance(entry, dict) or not isinstance(entry.get("fact"), str):
            reasons.append(f"corroboration[{n}] is not a fact with its source and value")
            continue
        pointer, source, said = entry["fact"], entry.get("source"), entry.get("value")
        if source not in sources:
            reasons.append(f"corroboration[{n}] names a source {source!r} not in provenance.sources")
            continue
        held = resolve_pointer(ev.r, pointer)
        if held is _ABSENT:
            reasons.append(f"{source} records {pointer} = {_short(said)}, which the rollout does not hold")
        elif held != said:
            first = _source_of(facts, pointer) or "the rollout"
            reasons.append(f"{pointer}: {first} records {_short(held)}, {source} records {_short(said)}")
    return reasons
