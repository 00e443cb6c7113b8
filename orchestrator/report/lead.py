"""The words a report opens with: the harness x label overview and each harness's list of what it gets wrong."""

from __future__ import annotations

from collections.abc import Iterator

from orchestrator.checks.catalogue import LABELS
from orchestrator.report.findings import LABEL_IDS, label_cells, wrongs
from orchestrator.report.html import episode_href, esc, url_part
from orchestrator.report.markdown import md
from orchestrator.report.table import HarnessView, shorten

__all__ = ["html_lead", "markdown_lead"]

_LABEL_TITLE = {label.id: f"{label.name}: {label.meaning}" for label in LABELS}


def _cls(cell: str) -> str:
    return "fail" if cell.startswith("✗") else "pass" if cell == "✓" else "na"


def html_lead(tables: list[HarnessView]) -> Iterator[str]:
    yield "<h2>Overview: evidence labels per harness</h2>"
    head = "".join(f'<th title="{esc(_LABEL_TITLE[k])}">{esc(k)}</th>' for k in LABEL_IDS)
    yield f'<table class="overview"><thead><tr><th>harness</th>{head}<th>process</th><th>verdict</th></tr></thead>'
    yield "<tbody>"
    for t in tables:
        cells = label_cells(t.episodes())
        tds = "".join(f'<td class="{_cls(v)}">{esc(v)}</td>' for v in cells.values())
        yield (
            f'<tr><th><a href="#h-{esc(url_part(t.name))}"><code>{esc(t.name)}</code></a></th>{tds}'
            f'<td><span class="badge {esc(t.verdict)}">{esc(t.verdict)}</span></td></tr>'
        )
    yield "</tbody></table>"
    legend = "".join(f"<li><b>{esc(label.id)}</b> {esc(label.name)}: {esc(label.meaning)}</li>" for label in LABELS)
    yield (
        '<details class="labels"><summary>what E1-E10 mean</summary>'
        f"<ul>{legend}</ul><p>✓ every applicable check carrying the label passed; ✗ n failing results; "
        "— no check with it applied. <code>harness-probe checks explain ID</code> explains a check.</p></details>"
    )
    for t in tables:
        found = wrongs(t)
        yield f"<h3>What <code>{esc(t.name)}</code>'s self-report gets wrong</h3>"
        if not found.items:
            yield "<p>Nothing: every applicable check passes in every scenario.</p>"
            continue
        yield '<ul class="wrongs">'
        for w in found.items:
            href = episode_href(t.name, w.example_scenario)
            yield (
                f'<li data-check="{esc(w.check)}"><b>{esc(w.lie)}</b> (<code>{esc(w.check)}</code>; in '
                f"{esc(w.where())})<br>for example, "
                f'<a class="episode" href="{esc(href)}">{esc(w.example_scenario)}</a>: '
                f"{esc(shorten(w.example, 300))}</li>"
            )
        yield "</ul>"
        if found.blocked:
            yield f'<p class="meta">and {found.blocked} check results blocked by these failures</p>'


def markdown_lead(tables: list[HarnessView]) -> Iterator[str]:
    yield "## Overview"
    yield ""
    yield "| harness | " + " | ".join(LABEL_IDS) + " | process | verdict |"
    yield "| --- | " + " | ".join(":---:" for _ in LABEL_IDS) + " | :---: | --- |"
    for t in tables:
        cells = label_cells(t.episodes())
        yield f"| {md(t.name)} | " + " | ".join(cells.values()) + f" | {md(t.verdict)} |"
    yield ""
    yield "Labels: " + "; ".join(f"**{label.id}** {label.name}" for label in LABELS) + " (docs/evidence.md)."
    yield ""
    for t in tables:
        found = wrongs(t)
        yield f"### What {md(t.name)}'s self-report gets wrong"
        yield ""
        if not found.items:
            yield "Nothing: every applicable check passes in every scenario."
        for w in found.items:
            yield f"- {md(w.lie)} (`{w.check}`; in {md(w.where())})"
            if w.example:
                yield f"  - for example, {md(f'{w.example_scenario}: {w.example}', 240)}"
        if found.blocked:
            yield f"- and {found.blocked} check results blocked by these failures"
        yield ""
