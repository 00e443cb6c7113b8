"""An episode's timeline: witnessed attempts lined up with the recorded calls by the checks' own join, and marked.

The join is `orchestrator.checks.join.join_calls`, the one every wire-facing check reads: a row is the attempt and
the call the checks paired, an attempt no call pairs with (witnessed, not recorded), or a call no attempt answers
(recorded, never witnessed). A failing check is put on the rows its reasons name (an attempt, response, call or tool
call id; for an unpaired row, its key as the checks word it); a failure that names no row stays at the episode level.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from orchestrator.checks.evidence import Evidence
from orchestrator.checks.join import join_calls, model_calls, rollout_key, witness_key

__all__ = ["MAX_ROWS", "Mark", "Row", "Timeline", "ToolRow", "timeline"]

# Rows shown of a very large episode: the page stays quick to open; the files hold the rest.
MAX_ROWS = 2000

UNRECORDED = "witnessed, not recorded"
UNWITNESSED = "recorded, never witnessed"
AUXILIARY = "auxiliary, not recorded"  # a reply outside the script (title generation): recording it is optional


@dataclass(frozen=True)
class Mark:
    check: str
    tier: str
    reason: str


@dataclass
class ToolRow:
    tool_call_id: str
    witnessed: dict[str, Any] | None  # the witness's tool_call event
    recorded: dict[str, Any] | None  # the rollout's tool record
    markers: list[dict[str, Any]] = field(default_factory=list)
    seen: list[dict[str, Any]] = field(default_factory=list)  # tool_result_seen events
    state: str = ""  # "", UNRECORDED or UNWITNESSED
    marks: list[Mark] = field(default_factory=list)


@dataclass
class Row:
    attempt: dict[str, Any] | None
    call: dict[str, Any] | None
    state: str = ""  # "", UNRECORDED, UNWITNESSED, or "auxiliary, not recorded" (not required)
    step: Any = None  # the recorded step holding the call
    marks: list[Mark] = field(default_factory=list)
    tools: list[ToolRow] = field(default_factory=list)


@dataclass
class Timeline:
    rows: list[Row]
    unplaced: list[Mark]  # failing checks that name no row
    failing: list[dict[str, Any]]  # the failing check results (blocked ones included)
    left_off: int = 0  # rows not shown past MAX_ROWS
    unwitnessed_tools: list[ToolRow] = field(default_factory=list)


def _describe(kind: str, value: Any) -> str:
    # As attempts.multiset words a key in its reasons.
    return {"ok": f"success {value}", "error": f"HTTP {value} failure", "interrupted": "interrupted attempt"}[kind]


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _tokens(row: Row) -> list[str]:
    """Strings that, found in a reason, tie it to this row."""
    out = []
    if row.attempt is not None:
        out += [_str(row.attempt.get("attempt_id")), _str(row.attempt.get("response_id"))]
    if row.call is not None:
        out += [_str(row.call.get("model_call_id")), _str(row.call.get("response_id"))]
    if row.state:
        key = witness_key(row.attempt) if row.attempt is not None else rollout_key(row.call or {})
        out.append(_describe(*key))
    return [t for t in out if t]


def _index_steps(ev: Evidence) -> dict[str, Any]:
    steps = ev.r.get("steps") if ev.rollout is not None else None
    out: dict[str, Any] = {}
    for s in steps if isinstance(steps, list) else []:
        if isinstance(s, dict) and isinstance(s.get("model_call_refs"), list):
            for ref in s["model_call_refs"]:
                if isinstance(ref, str):
                    out.setdefault(ref, s.get("step_no"))
    return out


def _tool_rows(ev: Evidence, shown: set[str]) -> tuple[dict[str, list[ToolRow]], list[ToolRow]]:
    """The tool rows of the attempts shown (`shown`: their ids), and the recorded tool calls never witnessed."""
    recorded: dict[str, dict[str, Any]] = {}
    tools = ev.r.get("tool_calls") if ev.rollout is not None else None
    for t in tools if isinstance(tools, list) else []:
        if isinstance(t, dict) and isinstance(t.get("tool_call_id"), str):
            recorded.setdefault(t["tool_call_id"], t)
    by_attempt: dict[str, list[ToolRow]] = {}
    witnessed = set()
    for w in ev.w.tool_calls() if ev.witness is not None else []:
        tid = str(w.get("tool_call_id"))
        witnessed.add(tid)
        if str(w.get("attempt_id")) not in shown:  # past MAX_ROWS: its row is not built
            continue
        rec = recorded.get(tid)
        row = ToolRow(tid, w, rec, ev.w.markers(tid), ev.w.results_seen(tid), "" if rec is not None else UNRECORDED)
        by_attempt.setdefault(str(w.get("attempt_id")), []).append(row)
    extra = [ToolRow(tid, None, t, state=UNWITNESSED) for tid, t in recorded.items() if tid not in witnessed]
    return by_attempt, extra


def _rows(ev: Evidence) -> tuple[list[Row], int]:
    """The rows of the first MAX_ROWS attempts (and the unanswered calls among them), and how many more there are:
    a 100,000-call audit builds 2,000 rows, not 100,000."""
    attempts = ev.w.attempts(None) if ev.witness is not None else []
    calls = model_calls(ev) if ev.rollout is not None else []
    if ev.witness is None:
        return [Row(None, c, UNWITNESSED) for c in calls[:MAX_ROWS]], max(0, len(calls) - MAX_ROWS)
    if ev.rollout is None:
        alone = [Row(a, None, UNRECORDED if a.get("kind") == "model" else AUXILIARY) for a in attempts[:MAX_ROWS]]
        return alone, max(0, len(attempts) - MAX_ROWS)
    joined = join_calls(ev)
    call_of = {id(a): c for c, a in joined.pairs}
    unmatched = {id(c) for c in joined.unmatched}
    rows: list[Row] = []
    for a in attempts[:MAX_ROWS]:
        c = call_of.get(id(a))
        state = "" if c is not None else UNRECORDED if a.get("kind") == "model" else AUXILIARY
        rows.append(Row(a, c, state))
    left_off = max(0, len(attempts) - MAX_ROWS)
    # A call no attempt answers goes after the row of the call recorded before it (or first).
    position = {id(r.call): n for n, r in enumerate(rows) if r.call is not None}
    inserts: list[tuple[int, int, Row]] = []
    last = -1
    for order, c in enumerate(calls):
        if id(c) in unmatched:
            if last + 1 > len(rows):
                left_off += 1  # placed among the rows not shown
            else:
                inserts.append((last + 1, order, Row(None, c, UNWITNESSED)))
        else:
            last = position.get(id(c), len(rows) if id(c) not in position and left_off else last)
    for at, _order, row in sorted(inserts, key=lambda x: (x[0], x[1]), reverse=True):
        rows.insert(at, row)
    return rows, left_off


# A run of name characters: the reasons' ids (attempt-3, call_0a1b, chatcmpl-probe-2.x) are such runs, set off by
# spaces and punctuation.
_WORD = re.compile(r"[\w.\-]+")


class _Names:
    """Which rows and tool rows a reason names, found by the words of the reason (not every token tried against every
    reason: a 100,000-call episode's failing check has as many reasons, and the page's rows 2,000 x several tokens).

    A token names a reason when it stands in it as a word of its own: attempt-1 does not name a reason about
    attempt-12. A token of several words (an unpaired row's key, `HTTP 429 failure`) is looked up by its longest word
    and then found in the reason whole; one without any name character names nothing."""

    def __init__(self) -> None:
        self._words: dict[str, list[list[Mark]]] = {}
        self._phrases: dict[str, dict[str, list[list[Mark]]]] = {}  # longest word -> phrase -> targets

    def add(self, token: str, marks: list[Mark]) -> None:
        words = _WORD.findall(token)
        if not words:
            return
        if words == [token]:
            targets = self._words.setdefault(token, [])
        else:
            targets = self._phrases.setdefault(max(words, key=len), {}).setdefault(token, [])
        if not any(t is marks for t in targets):
            targets.append(marks)

    def named(self, reason: str) -> list[list[Mark]]:
        found: dict[int, list[Mark]] = {}
        words, phrases = self._words, self._phrases
        for word in _WORD.findall(reason):
            # A full stop ends a sentence, not an id: such a word is looked up with it and without it. Most words
            # name nothing (a 100,000-call episode has as many reasons): a membership test, no set or dict built.
            for key in (word, word.rstrip(".")) if word[-1] == "." else (word,):
                if key in words:
                    for marks in words[key]:
                        found.setdefault(id(marks), marks)
                if key in phrases:
                    for phrase, targets in phrases[key].items():
                        if phrase in reason:
                            for marks in targets:
                                found.setdefault(id(marks), marks)
        return list(found.values())


def _mark(rows: list[Row], tools: list[ToolRow], failing: list[dict[str, Any]]) -> list[Mark]:
    names = _Names()
    for r in rows:
        for token in _tokens(r):
            names.add(token, r.marks)
    for t in tools:
        if t.tool_call_id:
            names.add(t.tool_call_id, t.marks)
    unplaced = []
    for c in failing:
        for reason in c["reasons"] or [""]:
            mark = Mark(c["id"], c["tier"], reason)
            targets = names.named(reason)
            for marks in targets:
                marks.append(mark)
            if not targets:
                unplaced.append(mark)
    return unplaced


def timeline(ev: Evidence, result: dict[str, Any]) -> Timeline:
    """The rows of one episode, marked with the failing checks of its result (checks not re-run)."""
    rows, left_off = _rows(ev)
    steps = _index_steps(ev)
    shown = {str(r.attempt.get("attempt_id")) for r in rows if r.attempt is not None}
    by_attempt, extra = _tool_rows(ev, shown) if ev.witness is not None else ({}, [])
    tools: list[ToolRow] = list(extra)
    for r in rows:
        if r.call is not None:
            r.step = steps.get(str(r.call.get("model_call_id")))
        if r.attempt is not None:
            r.tools = by_attempt.get(str(r.attempt.get("attempt_id")), [])
            tools += r.tools
    failing = [c for c in result.get("checks", []) if c.get("status") == "fail"]
    unblocked = [c for c in failing if not (c["reasons"] and str(c["reasons"][0]).startswith("blocked by"))]
    unplaced = _mark(rows, tools, unblocked)
    return Timeline(rows, unplaced, failing, left_off, extra)
