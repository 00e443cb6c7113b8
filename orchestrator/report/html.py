"""report.html: the report's tables as one self-contained page; clicking a cell shows its reasons."""

from __future__ import annotations

import base64
import hashlib
import html
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import quote as _quote

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

__all__ = ["csp", "episode_href", "esc", "html_chunks", "render_html"]

_CLASS = {"pass": "pass", "fail": "fail", "not_applicable": "na", None: "none"}
_STATUS_TEXT = {"pass": "pass", "fail": "fail", "not_applicable": "not applicable", None: "not run"}

# Inline on purpose: the page is opened from CI artifacts and offline audits, so it must need nothing else.
_CSS = """
:root { --pass:#d9f2df; --pass-fg:#14632f; --fail:#fbdcdc; --fail-fg:#a11b1b; --na:#eceef2; --na-fg:#5b6472;
  --line:#d5d9e0; --fg:#1d232b; --muted:#5b6472; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg);
  margin: 0 auto; padding: 1.5rem 2rem 4rem; max-width: 90rem; }
h1 { font-size: 1.5rem; margin: 0 0 .5rem; }
h2 { font-size: 1.2rem; margin: 2.2rem 0 .6rem; }
h2 code { font-size: 1.1rem; }
code, .mono { font: 12.5px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
code { unicode-bidi: bidi-override; direction: ltr; }
.meta { color: var(--muted); margin: 0 0 .8rem; }
.meta b { color: var(--fg); }
.badge { display: inline-block; padding: .05rem .55rem; border-radius: 999px; font-weight: 600;
  font-size: 12.5px; }
.badge.pass { background: var(--pass); color: var(--pass-fg); }
.badge.fail { background: var(--fail); color: var(--fail-fg); }
.badge.error { background: #fde7c7; color: #8a4b00; }
.badge.skipped { background: var(--na); color: var(--na-fg); }
.badge.interrupted { background: #e4ddf7; color: #4b2d8a; }
.legend { display: flex; gap: 1rem; flex-wrap: wrap; margin: .4rem 0 1rem; color: var(--muted); }
.legend span.sym { display: inline-block; width: 1.6rem; text-align: center; border-radius: 4px;
  margin-right: .3rem; border: 1px solid var(--line); }
table { border-collapse: collapse; margin: .4rem 0 1rem; }
th, td { border: 1px solid var(--line); padding: .3rem .6rem; text-align: left; vertical-align: top; }
thead th { background: #f4f6f9; }
th.scn { text-align: center; }
tr.group th { background: #f9fafb; text-transform: uppercase; letter-spacing: .06em; font-size: 11.5px;
  color: var(--muted); }
td.cell { position: relative; padding: 0; text-align: center; min-width: 6.5rem; }
.pass { background: var(--pass); color: var(--pass-fg); }
.fail { background: var(--fail); color: var(--fail-fg); }
.na { background: var(--na); color: var(--na-fg); }
.none { background: #fff; color: var(--muted); }
td.cell details > summary { list-style: none; cursor: pointer; padding: .3rem .6rem; font-weight: 700; }
td.cell details > summary::-webkit-details-marker { display: none; }
td.cell details[open] > summary { outline: 2px solid #3b6fd8; outline-offset: -2px; }
.pop { position: absolute; top: 100%; left: 0; z-index: 10; width: min(34rem, 80vw); text-align: left;
  background: #fff; color: var(--fg); border: 1px solid #9aa3b1; border-radius: 6px; padding: .6rem .8rem;
  box-shadow: 0 6px 24px rgba(0,0,0,.18); font-weight: 400; }
.pop dl { margin: 0; display: grid; grid-template-columns: max-content 1fr; gap: .15rem .7rem; }
.pop dt { color: var(--muted); }
.pop dd { margin: 0; overflow-wrap: anywhere; }
.pop ol { margin: .4rem 0 0; padding-left: 1.3rem; max-height: 16rem; overflow: auto; }
.pop li { white-space: pre-wrap; overflow-wrap: anywhere; }
td.reason { max-width: 40rem; overflow-wrap: anywhere; }
ul.errors li { white-space: pre-wrap; }
table.overview td { text-align: center; min-width: 2.6rem; } ul.wrongs li { margin-bottom: .45rem; }
.pop p.go { margin: .5rem 0 0; } details.labels { margin: 0 0 1rem; color: var(--muted); }
"""

# Opening one cell closes the others, and Escape closes all: the page stays readable after many clicks.
# A popover that would run past the window's right edge is moved left, as far as the window allows.
_JS = """
document.addEventListener("toggle", function (ev) {
  var d = ev.target;
  if (!(d instanceof HTMLDetailsElement) || !d.open) return;
  document.querySelectorAll("td.cell details[open]").forEach(function (o) { if (o !== d) o.open = false; });
  var pop = d.querySelector(".pop");
  if (!pop) return;
  pop.style.left = "0px";
  var r = pop.getBoundingClientRect();
  var over = r.right - (document.documentElement.clientWidth - 8);
  if (over > 0) pop.style.left = -Math.max(0, Math.min(over, r.left - 8)) + "px";
}, true);
document.addEventListener("keydown", function (ev) {
  if (ev.key !== "Escape") return;
  document.querySelectorAll("td.cell details[open]").forEach(function (o) { o.open = false; });
});
"""


def episode_href(harness: str, scenario: str) -> str:
    """The relative link from a run's root to an episode's page."""
    return f"{url_part(harness)}/{url_part(scenario)}/episode.html"


def url_part(name: str, safe: str = "") -> str:
    """A file's or folder's name percent-encoded for a link (`safe`: characters left as they are, "/" for a path):
    its bytes, so a name that is not UTF-8 (read with surrogateescape) is linked as it is on disk, not raising."""
    try:
        raw = name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate no file name decodes to (one from JSON text)
        raw = name.encode("utf-8", "surrogatepass")
    return _quote(raw, safe=safe)


def esc(text: str) -> str:
    return html.escape(clean(text), quote=True)


def csp(script: str) -> str:
    """A page's policy: its one inline script (by hash) and inline styles run; nothing is loaded, framed or submitted.
    Every harness text is escaped already; this holds if an escape were ever missed (pages open from file://)."""
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    policy = (
        f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; base-uri 'none'; "
        "form-action 'none'"
    )
    return f'<meta http-equiv="Content-Security-Policy" content="{policy}">'


def _badge(verdict: str) -> str:
    return f'<span class="badge {esc(verdict)}">{esc(verdict)}</span>'


def _cell(row: Row, cell: Cell, _i: int = 0, harness: str = "") -> str:
    status = cell.status
    link = (
        f'<p class="go"><a class="episode" href="{esc(episode_href(harness, cell.scenario))}">episode page →</a></p>'
        if harness
        else ""
    )
    shown, more = listed(cell.reasons)
    # A reason may quote a whole tool output (megabytes): the popover shows its start, scenario_result.json all of it.
    reasons = "".join(f"<li>{esc(shorten(r, 1000))}</li>" for r in [*shown, *([more] if more else [])])
    pop = (
        f'<div class="pop"><dl>'
        f"<dt>check</dt><dd><code>{esc(row.id)}</code> ({esc(row.kind)}, {esc(row.tier)})</dd>"
        f"<dt>scenario</dt><dd><code>{esc(cell.scenario)}</code></dd>"
        f"<dt>status</dt><dd>{esc(_STATUS_TEXT[status])}</dd>"
        f"<dt>evidence</dt><dd>{esc(', '.join(row.evidence) or '-')}</dd>"
        f"<dt>location</dt><dd><code>{esc(cell.location)}</code></dd>"
        f"</dl>{f'<ol>{reasons}</ol>' if reasons else ''}{link}</div>"
    )
    title = f"{row.id} in {cell.scenario}: {_STATUS_TEXT[status]}"
    return (
        f'<td class="cell {_CLASS[status]}" title="{esc(title)}"><details>'
        f"<summary>{SYMBOLS[status]}</summary>{pop}</details></td>"
    )


def _check_table(t: HarnessView) -> Iterator[Line]:
    yield '<table class="checks">'
    yield "<thead><tr><th>check</th><th>tier</th>"
    yield from (
        f'<th class="scn"><a href="{esc(episode_href(t.name, s))}"><code>{esc(s)}</code></a></th>'
        for s in t.scenarios()
    )
    yield "</tr></thead><tbody>"
    span = 2 + t.count
    cells = row_cells(t, lambda row, cell, i: _cell(row, cell, i, t.name))
    for title, rows in t.groups():
        yield f'<tr class="group"><th colspan="{span}">{esc(title)}</th></tr>'
        for row in rows:
            yield pieces(
                f"<tr><th><code>{esc(row.id)}</code></th><td>{esc(row.tier)}</td>", read_back(cells[row.id]), "</tr>"
            )
    yield "</tbody></table>"


def _first_failure(episode: dict[str, Any]) -> str:
    ff = episode["first_failure"]
    if ff is None:
        return ""
    return f"<code>{esc(ff['source'])}</code>: {esc(shorten(ff['reason'], 600))}"


def _scenario_table(t: HarnessView) -> Iterator[Line]:
    yield (
        '<table class="scenarios"><thead><tr><th>scenario</th><th>verdict</th><th>execution</th>'
        "<th>normalize</th><th>first failure</th></tr></thead><tbody>"
    )
    for e in t.episodes():
        norm = e["normalize"]
        normalize = norm["status"] if norm["status"] != "error" else f"error: {shorten(norm['message'] or '')}"
        yield (
            f'<tr><td><a href="{esc(episode_href(t.name, e["scenario"]))}"><code>{esc(e["scenario"])}</code></a></td>'
            f"<td>{_badge(e['verdict'])}</td>"
            f"<td>{esc(shorten(execution_text(e)))}</td><td>{esc(normalize)}</td>"
            f'<td class="reason">{_first_failure(e)}</td></tr>'
        )
    yield "</tbody></table>"


def _body(summary: dict[str, Any], tables: Iterable[HarnessView]) -> Iterator[Line]:
    ts = summary["timestamps"]
    legend = "".join(
        f'<span><span class="sym {_CLASS[status]}">{SYMBOLS[status]}</span>{esc(text)}</span>'
        for status, text in LEGEND
    )
    yield "<h1>harness-probe report</h1>"
    yield (
        f'<p class="meta">run <b class="mono">{esc(summary["run_id"])}</b> · profile '
        f"<b>{esc(summary['profile'])}</b> · harness-probe {esc(summary['tool_version'])} · "
        f"started {esc(ts['started_at'])} · finished {esc(ts['finished_at'])} · full suite: "
        f"<b>{'yes' if summary['full_suite'] else 'no'}</b></p>"
    )
    yield f"<p>verdict {_badge(summary['verdict'])} exit code <b>{summary['exit_code']}</b></p>"
    yield f'<div class="legend">{legend}<span>click a cell for its reasons and location</span></div>'
    overrides = overrides_of(summary)
    if overrides:
        yield '<h2>Pins overridden</h2><ul class="overrides">'
        yield from (f"<li>{esc(override_text(n, o))}</li>" for n, o in overrides.items())
        yield "</ul>"
    stopped = interruption_lines(summary)
    if stopped:
        yield '<h2>Interrupted</h2><ul class="errors">'
        yield from (f"<li>{esc(line)}</li>" for line in stopped)
        yield "</ul>"
    if summary["errors"]:
        yield '<h2>Errors</h2><ul class="errors">'
        yield from (f"<li>{esc(err)}</li>" for err in summary["errors"])
        yield "</ul>"
    tables = list(tables)
    from orchestrator.report.lead import html_lead  # lead imports this module's esc

    yield from html_lead(tables)
    for t in tables:
        yield f'<h2 id="h-{esc(url_part(t.name))}"><code>{esc(t.name)}</code> {_badge(t.verdict)}</h2>'
        yield from _check_table(t)
        yield from _scenario_table(t)


def html_chunks(summary: dict[str, Any], tables: Iterable[HarnessView]) -> Iterator[str]:
    """report.html in pieces: `summary` for the run's header fields, `tables` for its harnesses."""
    yield (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8">{csp(_JS)}'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>harness-probe report {esc(summary['run_id'])}</title>"
        f"<style>{_CSS}</style></head>\n<body>\n"
    )
    yield from joined(_body(summary, tables))
    yield f"\n<script>{_JS}</script>\n</body></html>\n"


def render_html(summary: dict[str, Any]) -> str:
    return "".join(html_chunks(summary, views(summary)))
