"""report.md: one check x scenario table per harness, rows grouped by kind, then each scenario's verdict."""

from __future__ import annotations

import re
from typing import Any

from orchestrator.report.table import (
    LEGEND,
    SYMBOLS,
    HarnessTable,
    clean,
    execution_text,
    harness_tables,
    shorten,
)

__all__ = ["render_markdown"]

# Backslash-escaping every character Markdown gives meaning to keeps harness output literal: no tables
# broken by `|`, no emphasis, no links, and no raw HTML (`<script>`) for renderers that would pass it on.
_MARKUP = re.compile(r"([\\`*_{}\[\]<>()#+!|&~])")


def md(text: str, limit: int = 300) -> str:
    return _MARKUP.sub(r"\\\1", shorten(clean(text), limit))


def _code(text: str) -> str:
    # Names and ids are ours, but a backtick or line break in one must not break the code span or the table.
    safe = "`" not in text and "|" not in text and text == shorten(clean(text))
    return f"`{text}`" if safe else md(text)


def _verdict(verdict: str) -> str:
    return {"pass": "✓ pass", "fail": "✗ fail", "error": "error", "skipped": "skipped"}.get(verdict, verdict)


def _check_table(t: HarnessTable) -> list[str]:
    lines = [
        "| check | tier | " + " | ".join(_code(s) for s in t.scenarios) + " |",
        "| --- | --- | " + " | ".join(":---:" for _ in t.scenarios) + " |",
    ]
    blanks = " |" * len(t.scenarios)
    for g in t.groups:
        lines.append(f"| **{g.title}** | |{blanks}")
        for row in g.rows:
            cells = " | ".join(SYMBOLS[c.status] for c in row.cells)
            lines.append(f"| {_code(row.id)} | {row.tier} | {cells} |")
    return lines


def _first_failure(episode: dict[str, Any]) -> str:
    ff = episode["first_failure"]
    if ff is None:
        return ""
    return f"{_code(ff['source'])}: {md(ff['reason'])}"


def _scenario_table(t: HarnessTable) -> list[str]:
    lines = [
        "| scenario | verdict | execution | normalize | first failure |",
        "| --- | --- | --- | --- | --- |",
    ]
    for e in t.episodes:
        norm = e["normalize"]
        normalize = norm["status"] if norm["status"] != "error" else f"error: {md(norm['message'] or '')}"
        lines.append(
            f"| {_code(e['scenario'])} | {_verdict(e['verdict'])} | {md(execution_text(e))} | "
            f"{normalize} | {_first_failure(e)} |"
        )
    return lines


def render_markdown(summary: dict[str, Any]) -> str:
    ts = summary["timestamps"]
    lines = [
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
    if summary["errors"]:
        lines += ["## Errors", ""] + [f"- {md(err, 1000)}" for err in summary["errors"]] + [""]
    for t in harness_tables(summary):
        lines += [f"## {md(t.name)}: {_verdict(t.verdict)}", ""]
        lines += [*_check_table(t), ""]
        lines += [*_scenario_table(t), ""]
    return "\n".join(lines)
