"""The check x scenario grid of one harness, shared by the Markdown and HTML reports so both agree."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = [
    "GROUPS",
    "LEGEND",
    "SYMBOLS",
    "Cell",
    "Group",
    "HarnessTable",
    "Row",
    "clean",
    "execution_text",
    "harness_tables",
    "shorten",
]

# Process rows judge how the harness process ended, kept apart from the artifact checks above them.
GROUPS = (("schema", "Schema"), ("semantic", "Semantic"), ("behavioral", "Behavioral"), ("process", "Process"))
# `None` is a check that has no result in that episode (skipped, or never checked).
SYMBOLS: dict[str | None, str] = {"pass": "✓", "fail": "✗", "not_applicable": "—", None: "·"}
LEGEND: tuple[tuple[str | None, str], ...] = (
    ("pass", "pass"),
    ("fail", "fail"),
    ("not_applicable", "not applicable (outside the scenario's declared scope)"),
    (None, "not run (episode skipped or never checked)"),
)

# Characters XML 1.0 cannot carry and terminals' escape sequences: harness output is full of them.
_UNPRINTABLE = re.compile("[^\t\n\r\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(text: str) -> str:
    """Make text safe for every report format: control characters and lone surrogates become escapes."""
    return _UNPRINTABLE.sub(_escape, text)


def shorten(text: str, limit: int = 300) -> str:
    """One line of at most `limit` characters, for table cells and attribute values."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@dataclass(frozen=True)
class Cell:
    scenario: str
    status: str | None  # None: the episode has no result for this check
    reasons: tuple[str, ...]
    location: str


@dataclass(frozen=True)
class Row:
    id: str
    kind: str
    tier: str
    evidence: tuple[str, ...]
    cells: tuple[Cell, ...]


@dataclass(frozen=True)
class Group:
    kind: str
    title: str
    rows: tuple[Row, ...]


@dataclass(frozen=True)
class HarnessTable:
    name: str
    verdict: str
    scenarios: tuple[str, ...]
    groups: tuple[Group, ...]
    episodes: tuple[dict[str, Any], ...]


def _table(harness: dict[str, Any]) -> HarnessTable:
    episodes = harness["scenarios"]
    # Rows in the profile's order, as the first episode that ran a check lists it.
    defs: dict[str, dict[str, Any]] = {}
    for e in episodes:
        for c in e["checks"]:
            defs.setdefault(c["id"], c)
    by_episode = [{c["id"]: c for c in e["checks"]} for e in episodes]
    groups = []
    for kind, title in GROUPS:
        rows = []
        for cid, d in defs.items():
            if d["kind"] != kind:
                continue
            cells = []
            for e, found in zip(episodes, by_episode, strict=True):
                c = found.get(cid)
                cells.append(
                    Cell(
                        e["scenario"],
                        c["status"] if c else None,
                        tuple(c["reasons"]) if c else (),
                        c["location"] if c else d["location"],
                    )
                )
            rows.append(Row(cid, kind, d["tier"], tuple(d["evidence"]), tuple(cells)))
        if rows:
            groups.append(Group(kind, title, tuple(rows)))
    return HarnessTable(
        harness["name"],
        harness["verdict"],
        tuple(e["scenario"] for e in episodes),
        tuple(groups),
        tuple(episodes),
    )


def harness_tables(summary: dict[str, Any]) -> list[HarnessTable]:
    return [_table(h) for h in summary["harnesses"]]


def execution_text(episode: dict[str, Any]) -> str:
    """How the harness process ended, in a few words."""
    ex = episode["execution"]
    status = ex["status"]
    if status == "exited":
        return f"exited with code {ex['exit_code']} after {ex['seconds']:g} s"
    if status == "timeout":
        return f"killed at the {ex['timeout_seconds']:g} s timeout"
    if status == "deadline":
        return f"still running at the scenario's {ex['deadline_seconds']:g} s deadline, killed"
    if status == "skipped":
        return f"skipped: {ex['error']}" if ex["error"] else "skipped"
    if status == "unknown":
        return "not recorded (audit of saved evidence)"
    return f"error: {ex['error']}" if ex["error"] else "error"
