"""Assistant turns the harness wrote itself: each one the wire shows the provider never served must be marked as the
harness's in the rollout's history, and a turn marked so must not be one the provider served."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from orchestrator.checks.continuation import text_of
from orchestrator.checks.evidence import Evidence, withheld
from orchestrator.checks.join import shared
from orchestrator.checks.model import Kind, check
from orchestrator.evidence.jsonread import strings
from orchestrator.evidence.validate import validate

__all__ = ["NOTES_PATH", "Turn", "known_notes", "wire_turns"]

# Data, not code: what each harness is known to write as its own turns, and the versions it was seen on.
NOTES_PATH = Path(__file__).with_name("authored_notes.json")


@dataclass(frozen=True)
class Turn:
    """An assistant turn as a request's history carries it: its tool-call ids and its text."""

    ids: tuple[str, ...]
    text: str

    def __str__(self) -> str:
        shown = self.text if len(self.text) <= 60 else self.text[:57] + "..."
        calls = f" calling {', '.join(self.ids)}" if self.ids else ""
        return f"{shown!r}{calls}" if shown else calls.strip()


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [x for x in value if isinstance(x, dict)] if isinstance(value, list) else []


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content.strip()
    texts = [b.get("text") for b in _dicts(content) if b.get("type") in (None, "text", "output_text", "input_text")]
    return "".join(t for t in texts if isinstance(t, str)).strip()


def _gemini_turn(content: dict[str, Any]) -> Turn:
    """A Gemini `model` content: its function calls' ids (either spelling) and its text parts (thoughts apart)."""
    parts = _dicts(content.get("parts"))
    calls = [p.get("functionCall", p.get("function_call")) for p in parts]
    ids = [c.get("id") for c in calls if isinstance(c, dict)]
    texts = [p.get("text") for p in parts if not p.get("thought")]
    return Turn(tuple(i for i in ids if isinstance(i, str)), "".join(t for t in texts if isinstance(t, str)).strip())


def wire_turns(request: Any) -> Iterator[Turn]:
    """The assistant turns in a request's history, in any of the four protocols."""
    if not isinstance(request, dict):
        return
    for m in _dicts(request.get("messages")):  # Chat Completions and Messages
        if m.get("role") != "assistant":
            continue
        ids = [tc.get("id") for tc in _dicts(m.get("tool_calls"))]  # Chat
        ids += [b.get("id") for b in _dicts(m.get("content")) if b.get("type") == "tool_use"]  # Messages
        yield Turn(tuple(i for i in ids if isinstance(i, str)), _text(m.get("content")))
    for item in _dicts(request.get("input")):  # Responses
        if item.get("type") == "function_call" and isinstance(item.get("call_id"), str):
            yield Turn((item["call_id"],), "")
        elif item.get("role") == "assistant" and item.get("type", "message") == "message":
            yield Turn((), _text(item.get("content")))
    for content in _dicts(request.get("contents")):  # Gemini
        if content.get("role") == "model":
            yield _gemini_turn(content)


def _served(ev: Evidence) -> tuple[set[str], list[str]]:
    """Every id and every text the provider sent in a reply (scripted, auxiliary or refused), as the witness holds
    them: ids exactly, texts to find a turn's text in (a cut or partial reply's text is part of one). Shared."""
    return shared(ev, "served_strings", _collect_served)


def _collect_served(ev: Evidence) -> tuple[set[str], list[str]]:
    found: set[str] = set()
    for a in ev.w.attempts(None):
        found.update(strings(a.get("response")))
        for payload in a.get("sse_events") or []:
            try:
                found.update(strings(json.loads(payload)))
            except (ValueError, RecursionError):
                found.add(payload)
    for c in ev.w.of("tool_call"):
        found.add(str(c.get("tool_call_id")))
    return found, sorted(found, key=len, reverse=True)


def _is_served(turn: Turn, ids: set[str], texts: list[str]) -> bool:
    if turn.ids:
        return all(i in ids for i in turn.ids)
    return not turn.text or any(turn.text in t for t in texts)


def _recorded(ev: Evidence) -> list[tuple[str, int, dict[str, Any]]]:
    """(invocation id, index, entry) of each assistant turn in the rollout's histories."""
    out = []
    for inv in _dicts(ev.r.get("invocations")):
        for n, m in enumerate(_dicts(inv.get("conversation"))):
            if m.get("role") == "assistant":
                out.append((str(inv.get("invocation_id")), n, m))
    return out


def _entry_turn(m: dict[str, Any]) -> Turn:
    ids = [tc.get("tool_call_id") for tc in _dicts(m.get("tool_calls"))]
    content = m.get("content")
    return Turn(tuple(i for i in ids if isinstance(i, str)), (text_of(content) or "").strip())


def _same(recorded: Turn, wire: Turn) -> bool:
    if wire.ids or recorded.ids:
        return bool(set(wire.ids) & set(recorded.ids))
    return bool(wire.text) and (wire.text in recorded.text or recorded.text in wire.text) and bool(recorded.text)


@cache
def _notes() -> tuple[dict[str, Any], ...]:
    data = json.loads(NOTES_PATH.read_text())
    validate(data, "authored-notes/v1", NOTES_PATH.name)
    return tuple(data["notes"])


def known_notes(harness: Any, version: Any) -> list[str]:
    """What is known of this harness version's own turns (orchestrator/checks/authored_notes.json)."""
    return [
        f"{n['note']} (seen on {harness} {version})"
        for n in _notes()
        if n["harness"] == harness and version in n["versions"]
    ]


def _own_turns(ev: Evidence) -> list[tuple[dict[str, Any], Turn]]:
    """Each assistant turn a request sent that no reply served, once, with the first attempt that sent it (shared)."""
    return shared(ev, "own_turns", _find_own_turns)


def _find_own_turns(ev: Evidence) -> list[tuple[dict[str, Any], Turn]]:
    ids, texts = _served(ev)
    seen: set[Turn] = set()
    out = []
    for a in ev.w.attempts(None):
        if withheld(a, "request"):
            continue
        for turn in wire_turns(a.get("request")):
            if turn in seen:
                continue
            seen.add(turn)
            if not _is_served(turn, ids, texts):
                out.append((a, turn))
    return out


def _marked(ev: Evidence) -> bool:
    return any(m.get("origin") == "harness" for _, _, m in _recorded(ev))


@check(
    "history.harness_authored",
    kind=Kind.BEHAVIORAL,
    tier="P1",
    evidence=("E4",),
    location="$.invocations[*].conversation[?(@.role=='assistant')].origin",
    needs=("rollout", "witness"),
    depends_on=("history.rebuildable",),
    # Judged wherever there is a turn to judge: the wire shows one the provider never served, or the rollout marks one.
    scope=("harness_turns",),
    claims=lambda ev: ev.witness is not None and ev.rollout is not None and bool(_own_turns(ev) or _marked(ev)),
)
def harness_authored(ev: Evidence) -> list[str]:
    """Every assistant turn a request sent that the provider never served (a prefilled call, a synthesized
    "continue", a note the harness wrote as the model's) is in the rollout's history marked `origin: harness`; no turn
    the provider served is marked so.

    Lie caught: a history that passes off the harness's own words as the model's (a reader of the rollout, or a
    trainer on it, takes them for model output), or that hides them. Turns are joined to the wire by tool-call id,
    else by text; what is known of each harness's own turns, with the versions it was seen on, is kept in
    `orchestrator/checks/authored_notes.json` and quoted with its finding.
    """
    ids, texts = _served(ev)
    recorded = _recorded(ev)
    reasons: list[str] = []
    for a, turn in _own_turns(ev):
        matches = [(inv, n, m) for inv, n, m in recorded if _same(_entry_turn(m), turn)]
        if not matches:
            reasons.append(
                f"{a['attempt_id']} sent the assistant turn {turn}, which the provider never served, and the "
                "rollout's history holds no such turn"
            )
        for inv, n, m in matches:
            if m.get("origin") != "harness":
                reasons.append(
                    f"invocation {inv}: conversation[{n}] ({turn}, first sent in {a['attempt_id']}) was never "
                    "served by the provider, and it is not marked origin: harness"
                )
    for inv, n, m in recorded:
        turn = _entry_turn(m)
        if m.get("origin") == "harness" and (turn.ids or turn.text) and _is_served(turn, ids, texts):
            reasons.append(
                f"invocation {inv}: conversation[{n}] ({turn}) is marked origin: harness, but the provider served it"
            )
    if reasons:
        harness = ev.r.get("harness")
        name, version = (harness.get("name"), harness.get("version")) if isinstance(harness, dict) else (None, None)
        reasons += known_notes(name, version)
    return reasons
