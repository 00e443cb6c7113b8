"""report.md: one check x scenario table per harness, rows grouped by kind, then each scenario's verdict."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Iterator
from typing import Any

from orchestrator.report.overrides import override_text, overrides_of
from orchestrator.report.table import (
    LEGEND,
    SYMBOLS,
    Cell,
    HarnessView,
    Line,
    Row,
    clean,
    execution_text,
    interruption_lines,
    joined,
    listed,
    pieces,
    read_back,
    row_cells,
    shorten,
    views,
)

__all__ = ["markdown_chunks", "render_markdown"]

# Backslash-escaping every character Markdown gives meaning to keeps harness output literal: no tables
# broken by `|`, no emphasis, no links, and no raw HTML (`<script>`) for renderers that would pass it on.
_MARKUP = re.compile(r"([\\`*_{}\[\]<>()#+!|&~])")


def md(text: str, limit: int = 300) -> str:
    # `@` as an entity (added after the escapes, so its `&` stays one): report.md is pasted into pull requests,
    # where `@name` in a harness's text would notify that user or team.
    return _MARKUP.sub(r"\\\1", shorten(clean(text), limit)).replace("@", "&#64;")


def _code(text: str) -> str:
    # Names and ids are ours, but a backtick or line break in one must not break the code span or the table.
    safe = "`" not in text and "|" not in text and text == shorten(clean(text))
    return f"`{text}`" if safe else md(text)


def _verdict(verdict: str) -> str:
    labels = {
        "pass": "✓ pass",
        "fail": "✗ fail",
        "error": "error",
        "skipped": "skipped",
        "interrupted": "⏸ interrupted",
    }
    return labels.get(verdict, verdict)


def _symbol(_row: Row, cell: Cell, i: int) -> str:
    return f"{' | ' if i else ''}{SYMBOLS[cell.status]}"


def _check_table(t: HarnessView) -> Iterator[Line]:
    yield pieces("| check | tier | ", (f"{' | ' if i else ''}{_code(s)}" for i, s in enumerate(t.scenarios())), " |")
    yield pieces("| --- | --- | ", (f"{' | ' if i else ''}:---:" for i in range(t.count)), " |")
    blanks = " |" * t.count
    cells = row_cells(t, _symbol)
    for title, rows in t.groups():
        yield f"| **{title}** | |{blanks}"
        for row in rows:
            yield pieces(f"| {_code(row.id)} | {row.tier} | ", read_back(cells[row.id]), " |")


def _first_failure(episode: dict[str, Any]) -> str:
    ff = episode["first_failure"]
    if ff is None:
        return ""
    return f"{_code(ff['source'])}: {md(ff['reason'])}"


def _scenario_table(t: HarnessView) -> Iterator[Line]:
    yield "| scenario | verdict | execution | normalize | first failure |"
    yield "| --- | --- | --- | --- | --- |"
    for e in t.episodes():
        norm = e["normalize"]
        normalize = norm["status"] if norm["status"] != "error" else f"error: {md(norm['message'] or '')}"
        yield (
            f"| {_code(e['scenario'])} | {_verdict(e['verdict'])} | {md(execution_text(e))} | "
            f"{normalize} | {_first_failure(e)} |"
        )


def _lines(summary: dict[str, Any], tables: Iterable[HarnessView]) -> Iterator[Line]:
    ts = summary["timestamps"]
    yield from [
        "# harness-probe report",
        "",
        f"- run: {_code(summary['run_id'])}, profile {_code(summary['profile'])}, "
        f"harness-probe {md(summary['tool_version'])}",
        f"- started {md(ts['started_at'])}, finished {md(ts['finished_at'])}",
        f"- full suite: {'yes' if summary['full_suite'] else 'no (a partial run certifies nothing)'}",
        f"- verdict: **{_verdict(summary['verdict'])}** (exit code {summary['exit_code']})",
        "",
        "Legend: " + ", ".join(f"{SYMBOLS[status]} {text}" for status, text in LEGEND),
        "",
    ]
    overrides = overrides_of(summary)
    if overrides:
        yield from ["## Pins overridden", ""] + [f"- {md(override_text(n, o), 1000)}" for n, o in overrides.items()]
        yield ""
    stopped = interruption_lines(summary)
    if stopped:
        yield from ["## Interrupted", ""] + [f"- {md(line, 4000)}" for line in stopped] + [""]
    if summary["errors"]:
        yield from ["## Errors", ""] + [f"- {md(err, 1000)}" for err in summary["errors"]] + [""]
    tables = list(tables)
    from orchestrator.report.lead import markdown_lead  # lead imports md from here

    yield from markdown_lead(tables)
    for t in tables:
        yield from [f"## {md(t.name)}: {_verdict(t.verdict)}", ""]
        yield from _check_table(t)
        yield ""
        yield from _scenario_table(t)
        yield ""
        yield from _reasons(t)


def _reasons(t: HarnessView) -> Iterator[Line]:
    """Every failing check's every reason, one folded block per episode (report.md is read in PR comments)."""
    for e in t.episodes():
        failing = [c for c in e["checks"] if c["status"] == "fail"]
        if not failing:
            continue
        # HTML, not Markdown, inside <summary>: escaped as HTML.
        name = html.escape(shorten(clean(e["scenario"]), 200))
        yield f"<details><summary>{name}: {len(failing)} failing check(s)</summary>"
        yield ""
        for c in failing:
            yield f"- {_code(c['id'])} ({c['tier']})"
            shown, more = listed(c["reasons"])
            yield from (f"  - {md(r, 1000)}" for r in shown)
            if more:
                yield f"  - {md(more, 1000)}"
        yield ""
        yield "</details>"
        yield ""


def markdown_chunks(summary: dict[str, Any], tables: Iterable[HarnessView]) -> Iterator[str]:
    """report.md in pieces: `summary` for the run's header fields, `tables` for its harnesses."""
    return joined(_lines(summary, tables))


def render_markdown(summary: dict[str, Any]) -> str:
    return "".join(markdown_chunks(summary, views(summary)))
