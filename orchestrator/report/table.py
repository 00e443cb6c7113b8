"""The check x scenario grid of each harness, shared by the Markdown and HTML reports so both agree."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any

from orchestrator.evidence.text import clean

__all__ = [
    "GROUPS",
    "LEGEND",
    "MAX_REASONS",
    "SYMBOLS",
    "Cell",
    "CellText",
    "HarnessView",
    "Line",
    "Row",
    "clean",
    "execution_text",
    "interruption_lines",
    "joined",
    "listed",
    "pieces",
    "read_back",
    "row_cells",
    "row_of",
    "shorten",
    "view_of",
    "views",
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
    """One check row: the check as the first episode (in scenario order) that ran it lists it."""

    id: str
    kind: str
    tier: str
    evidence: tuple[str, ...]
    location: str  # shown for an episode that has no result for the check


@dataclass(frozen=True)
class HarnessView:
    """One harness's episodes as every report reads them: in scenario order, read again for each use.

    The episodes may live on disk (a streamed audit of thousands) or in a summary dict: reports never hold
    more than one episode, one row of cells in progress, and the rows' definitions.
    """

    name: str
    verdict: str
    options: dict[str, str]
    count: int
    rows: tuple[Row, ...]
    scenarios: Callable[[], Iterator[str]]
    episodes: Callable[[], Iterator[dict[str, Any]]]

    def groups(self) -> list[tuple[str, tuple[Row, ...]]]:
        """(title, rows) per kind in GROUPS order, kinds without rows left out."""
        out = []
        for kind, title in GROUPS:
            rows = tuple(r for r in self.rows if r.kind == kind)
            if rows:
                out.append((title, rows))
        return out


def row_of(check: dict[str, Any]) -> Row:
    return Row(check["id"], check["kind"], check["tier"], tuple(check["evidence"]), check["location"])


def view_of(harness: dict[str, Any]) -> HarnessView:
    """The view of one harness of a summary dict."""
    episodes: list[dict[str, Any]] = harness["scenarios"]
    defs: dict[str, Row] = {}
    for e in episodes:
        for c in e["checks"]:
            if c["id"] not in defs:
                defs[c["id"]] = row_of(c)
    return HarnessView(
        harness["name"],
        harness["verdict"],
        harness["options"],
        len(episodes),
        tuple(defs.values()),
        lambda: (e["scenario"] for e in episodes),
        lambda: iter(episodes),
    )


def views(summary: dict[str, Any]) -> list[HarnessView]:
    return [view_of(h) for h in summary["harnesses"]]


CellText = Callable[[Row, Cell, int], str]
# Bytes of one row's cells held in memory before the row goes to a file. Every row of a table fills at once, so
# rows x this is what a table holds: at 64 KiB a row, the 43 rows of 10,000 episodes held ~3 MiB that 1,000 did not.
_ROW_MEMORY = 1 << 12


def row_cells(view: HarnessView, render: CellText) -> dict[str, IO[str]]:
    """Every row's rendered cells, episode by episode in one pass; each row's text kept in a file past _ROW_MEMORY.

    `render(row, cell, i)` renders the cell of the i-th episode.
    """
    # Each is closed by read_back once its row is written out.
    out: dict[str, IO[str]] = {
        r.id: tempfile.SpooledTemporaryFile(_ROW_MEMORY, "w+", encoding="utf-8")  # noqa: SIM115
        for r in view.rows
    }
    for i, e in enumerate(view.episodes()):
        found = {c["id"]: c for c in e["checks"]}
        for row in view.rows:
            c = found.get(row.id)
            cell = Cell(
                e["scenario"],
                c["status"] if c else None,
                tuple(c["reasons"]) if c else (),
                c["location"] if c else row.location,
            )
            out[row.id].write(render(row, cell, i))
    return out


# Reasons a report lists per failing check of one episode: a check of a 100,000-call episode may give a reason per
# call, and a report (a PR comment, a page) must stay readable; scenario_result.json holds every one.
MAX_REASONS = 1000


def listed(reasons: list[str] | tuple[str, ...]) -> tuple[list[str], str | None]:
    """The reasons a report lists, and the line saying how many more there are (None when none is left out)."""
    more = len(reasons) - MAX_REASONS
    return list(reasons[:MAX_REASONS]), (f"… {more:,} more in scenario_result.json" if more > 0 else None)


Line = str | Iterator[str]  # a line, or a long one in pieces


def joined(lines: Iterable[Line]) -> Iterator[str]:
    """The lines joined by newlines, as "\\n".join would, without ever holding a whole long line."""
    for n, line in enumerate(lines):
        if n:
            yield "\n"
        if isinstance(line, str):
            yield line
        else:
            yield from line


def pieces(head: str, middle: Iterable[str], tail: str) -> Iterator[str]:
    yield head
    yield from middle
    yield tail


def read_back(buf: IO[str]) -> Iterator[str]:
    """A row's text, in pieces, and the buffer closed."""
    with buf:
        buf.seek(0)
        while piece := buf.read(1 << 16):
            yield piece


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
    if status == "interrupted":
        return f"interrupted: {ex['error']}" if ex["error"] else "interrupted (the run was stopped)"
    return f"error: {ex['error']}" if ex["error"] else "error"


# Not-run episodes named in a report's header, at most: the rest is counted (summary.json lists them all).
NOT_RUN_SHOWN = 20


def interruption_lines(summary: dict[str, Any]) -> list[str]:
    """What an interrupted run got through, for a report's header; empty for a run that was not interrupted."""
    record = summary.get("interrupted")
    if not isinstance(record, dict):
        return []
    by = f" by {record['signal']}" if record.get("signal") else ""
    not_run = [f"{e['harness']}/{e['scenario']}" for e in record["not_run"]]
    lines = [
        f"The run was interrupted{by}: {record['finished']} episode(s) finished, {record['interrupted']} interrupted "
        f"(cut short, not judged), {len(not_run)} did not run. These results are partial and certify nothing."
    ]
    if not_run:
        more = len(not_run) - NOT_RUN_SHOWN
        lines.append("Did not run: " + ", ".join(not_run[:NOT_RUN_SHOWN]) + (f" and {more} more" if more > 0 else ""))
    return lines
