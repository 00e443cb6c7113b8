"""episode.html: one episode's witnessed attempts beside what the harness recorded, the lies marked on their rows.

Self-contained (inline CSS and JS, no network), opened from file:// or a CI artifact; every harness string is escaped
(it is hostile input). Written next to the episode's files by `run`, `audit` and `merge`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import structlog

from orchestrator.checks.catalogue import LIES
from orchestrator.checks.evidence import Evidence
from orchestrator.paths import EpisodePaths
from orchestrator.report.episode_rows import UNRECORDED, UNWITNESSED, Mark, Row, ToolRow, timeline
from orchestrator.report.html import csp, esc, url_part
from orchestrator.report.table import execution_text, listed, shorten

log = structlog.get_logger(__name__)

__all__ = ["PAGE", "render_episode", "write_episode_page"]

PAGE = "episode.html"
HISTORY_CHARS = 6000  # of one request's history shown; the witness holds all of it
VALUE_CHARS = 2000  # of one string value shown (an output, an id, an error)
MAX_NATIVE_LINKS = 50
# Native files linked from the page: types a browser shows as text or downloads (see _inert). Lower case.
_INERT_SUFFIXES = frozenset(
    {"json", "jsonl", "ndjson", "txt", "log", "md", "yaml", "yml", "toml", "csv", "db", "sqlite", "sqlite3"}
)
_UNLINKED = "not linked: a browser could run it as a page (it is in the episode folder)"

_CSS = """
:root { --ok:#d9f2df; --ok-fg:#14632f; --bad:#fbdcdc; --bad-fg:#a11b1b; --line:#d5d9e0; --muted:#5b6472; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color:#1d232b; margin:0 auto;
  padding: 1.2rem 2rem 4rem; max-width: 96rem; }
h1 { font-size: 1.4rem; margin: 0 0 .4rem; } h1 code { font-size: 1.3rem; }
h2 { font-size: 1.1rem; margin: 1.6rem 0 .5rem; }
code, pre, .mono { font: 12.5px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
code { unicode-bidi: bidi-override; direction: ltr; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: .3rem 0; max-height: 24rem; overflow: auto;
  background: #f6f7f9; padding: .4rem .6rem; border-radius: 4px; }
.meta { color: var(--muted); } .meta a { margin-right: .8rem; }
.badge { display:inline-block; padding:.05rem .55rem; border-radius:999px; font-weight:600; font-size:12.5px; }
.badge.pass { background: var(--ok); color: var(--ok-fg); } .badge.fail, .badge.error { background: var(--bad);
  color: var(--bad-fg); } .badge.skipped { background:#eceef2; }
table.timeline { border-collapse: collapse; width: 100%; table-layout: fixed; }
.timeline th, .timeline td { border: 1px solid var(--line); padding: .35rem .5rem; vertical-align: top;
  overflow-wrap: anywhere; }
.timeline thead th { background: #f4f6f9; text-align: left; }
.timeline th.n { width: 3rem; } .timeline th.marks { width: 30%; }
tr.unrecorded td.wire, tr.unwitnessed td.rec, tr.tool.unrecorded td.wire, tr.tool.unwitnessed td.rec {
  background: var(--bad); }
tr.flagged td.marks { background: #fff4f4; }
td.missing { color: var(--bad-fg); font-weight: 600; font-style: italic; }
tr.tool td { background: #fbfbfd; font-size: 13px; } tr.tool td.n { color: var(--muted); text-align: right; }
.state { display:inline-block; font-weight: 700; color: var(--bad-fg); margin-bottom: .2rem; }
.mark { margin: .15rem 0 .35rem; } .mark code.check { font-weight: 700; }
.mark .tier { display:inline-block; border:1px solid var(--bad-fg); color: var(--bad-fg); border-radius: 4px;
  font-size: 11px; padding: 0 .3rem; margin: 0 .3rem; } .mark .why { display:block; color:#3a1010; }
dl.kv { margin: 0; display: grid; grid-template-columns: max-content 1fr; gap: .05rem .6rem; }
dl.kv dt { color: var(--muted); } dl.kv dd { margin: 0; }
ul.findings li { margin-bottom: .5rem; } details > summary { cursor: pointer; color: #2b55b5; }
"""

# Expand or fold every history at once; nothing else runs, and no data is read from script.
_JS = """
document.querySelectorAll("button[data-open]").forEach(function (b) {
  b.addEventListener("click", function () {
    var open = b.getAttribute("data-open") === "1";
    document.querySelectorAll("details.history").forEach(function (d) { d.open = open; });
  });
});
"""


def _j(value: Any, limit: int = 400) -> str:
    return esc(shorten(json.dumps(value, ensure_ascii=False, default=str), limit))


def _kv(pairs: list[tuple[str, Any]]) -> str:
    items = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in pairs)  # the keys are ours, plain words
    return f'<dl class="kv">{items}</dl>'


def _val(value: Any) -> str:
    if value is None:
        return "<i>null</i>"
    return f"<code>{esc(_cut(value)) if isinstance(value, str) else _j(value)}</code>"


def _cut(text: str) -> str:
    # A harness's output or id can be megabytes: the page shows its start, the evidence files hold all of it.
    if len(text) <= VALUE_CHARS:
        return text
    return f"{text[:VALUE_CHARS]}… (the first {VALUE_CHARS:,} of {len(text):,} characters)"


def _history(request: Any) -> str:
    if not isinstance(request, dict):
        return ""
    msgs = request.get("messages", request.get("input", request.get("contents")))
    n = len(msgs) if isinstance(msgs, list) else 0
    text = json.dumps(msgs if msgs is not None else request, ensure_ascii=False, indent=1, default=str)
    cut = len(text) > HISTORY_CHARS
    shown = text[-HISTORY_CHARS:] if cut else text
    note = f" (last {HISTORY_CHARS:,} of {len(text):,} characters; the witness has all)" if cut else ""
    return (
        # Folded until asked for (the buttons open them all): a 100-call episode carries the conversation 100 times.
        f'<details class="history"><summary>history sent: {n} message(s){esc(note)}</summary>'
        f"<pre>{esc(shown)}</pre></details>"
    )


def _wire(a: dict[str, Any]) -> str:
    pairs = [
        ("attempt", _val(a.get("attempt_id"))),
        ("kind", esc(str(a.get("kind")))),
        (
            "protocol",
            f"{esc(str(a.get('protocol')))} {esc(str(a.get('method')))} <code>{esc(_cut(str(a.get('path'))))}</code>"
            + (" (stream)" if a.get("stream") else ""),
        ),
        ("fault", esc(str(a.get("fault") or "none"))),
        ("status", f"{esc(str(a.get('status')))}, ended {esc(str(a.get('ended')))}"),
        ("response id", _val(a.get("response_id"))),
        ("finish", _val(a.get("finish_reason"))),
        ("usage", _val(a.get("usage"))),
        ("step", _val(a.get("step"))),
        ("times", f"{esc(str(a.get('started_at')))} → {esc(str(a.get('completed_at')))}"),
    ]
    if a.get("answer"):
        pairs.append(("answer", _val(a.get("answer"))))
    return _kv(pairs) + _history(a.get("request"))


def _recorded(c: dict[str, Any], step: Any) -> str:
    pairs = [
        ("call", _val(c.get("model_call_id"))),
        ("protocol", _val(c.get("protocol"))),
        ("status", f"{_val(c.get('status_code'))} {_val(c.get('error_category'))}"),
        ("response id", _val(c.get("response_id"))),
        ("finish", _val(c.get("finish_reason", c.get("response_status")))),
        ("tokens", _val(c.get("token_stats"))),
        ("step", _val(step)),
        ("invocation", _val(c.get("invocation_id"))),
        ("times", f"{esc(str(c.get('started_at')))} → {esc(str(c.get('completed_at')))}"),
    ]
    if c.get("error") is not None:
        pairs.append(("error", _val(c.get("error"))))
    return _kv(pairs)


def _marks(state: str, marks: list[Mark]) -> str:
    out = [f'<span class="state">{esc(state)}</span>'] if state and state in (UNRECORDED, UNWITNESSED) else []
    if state and state not in (UNRECORDED, UNWITNESSED):
        out.append(f"<i>{esc(state)}</i>")
    for m in marks:
        out.append(
            f'<div class="mark" data-check="{esc(m.check)}"><code class="check">{esc(m.check)}</code>'
            f'<span class="tier">{esc(m.tier)}</span><span class="why">{esc(shorten(m.reason, 600))}</span></div>'
        )
    return "".join(out)


def _cls(state: str, marks: list[Mark], base: str = "") -> str:
    names = [base] if base else []
    names += ["unrecorded"] if state == UNRECORDED else ["unwitnessed"] if state == UNWITNESSED else []
    names += ["flagged"] if marks or state in (UNRECORDED, UNWITNESSED) else []
    return " ".join(names)


def _tool(n: str, t: ToolRow) -> str:
    w, r = t.witnessed, t.recorded
    if w is not None:
        marker = "; ".join(f"present {m.get('present')}, content matches {m.get('matches')}" for m in t.markers)
        seen = "; ".join(f"token {'seen' if s.get('token_present') else 'not seen'}" for s in t.seen)
        wire = _kv(
            [
                ("tool call", _val(t.tool_call_id)),
                ("name", _val(w.get("name"))),
                ("arguments", _val(w.get("arguments"))),
                ("exit code", _val(w.get("exit_code", w.get("prescribed_exit_code")))),
                ("marker", esc(marker or "no marker event")),
                ("result seen", esc(seen or "no result sent back")),
            ]
        )
    else:
        wire = f'<span class="missing">{esc(UNWITNESSED)}</span>'
    rec = (
        _kv(
            [
                ("tool call", _val(r.get("tool_call_id"))),
                ("name", _val(r.get("tool_name"))),
                ("arguments", _val(r.get("arguments"))),
                ("status", f"{_val(r.get('status'))} exit {_val(r.get('exit_code'))}"),
                ("output", _val(r.get("output"))),
                ("step", _val(r.get("step_no"))),
            ]
        )
        if r is not None
        else f'<span class="missing">{esc(UNRECORDED)}</span>'
    )
    return (
        f'<tr class="tool {_cls(t.state, t.marks)}"><td class="n">{esc(n)}</td><td class="wire">{wire}</td>'
        f'<td class="rec">{rec}</td><td class="marks">{_marks(t.state, t.marks)}</td></tr>'
    )


def _row(n: int, r: Row) -> Iterator[str]:
    wire = _wire(r.attempt) if r.attempt is not None else f'<span class="missing">{esc(UNWITNESSED)}</span>'
    if r.call is not None:
        rec = _recorded(r.call, r.step)
    else:
        rec = f'<span class="missing">{esc(r.state or UNRECORDED)}</span>'
    yield (
        f'<tr class="call {_cls(r.state, r.marks)}" id="row-{n}"><td class="n">{n}</td><td class="wire">{wire}</td>'
        f'<td class="rec">{rec}</td><td class="marks">{_marks(r.state, r.marks)}</td></tr>'
    )
    for k, t in enumerate(r.tools, 1):
        yield _tool(f"{n}.{k}", t)


def _link(root: Path, name: str) -> str:
    if not os.path.lexists(root / name):
        return ""
    return f'<a href="{esc(url_part(name, safe="/"))}">{esc(name)}</a>'


def _inert(name: str) -> bool:
    """Whether a browser shows a file of this name as text (or downloads it), never as a page that runs script.

    Measured in Chromium over file://: .json, .jsonl, .db and a name without a dot are text/plain (Chromium does not
    sniff file:// for HTML), .log text/x-log, .md text/markdown, .csv and .yaml downloaded. Anything else (.html,
    .svg, .xml, .xhtml, .shtml, .mhtml, a suffix no one measured) is left unlinked: a harness's `log.html` would
    run its script from the page's own folder with one click.
    """
    stem, dot, suffix = name.rpartition(".")
    return not dot or (bool(stem) and suffix.lower() in _INERT_SUFFIXES)


def _native_links(root: Path) -> str:
    native = root / "native"
    if not native.is_dir() or native.is_symlink():
        return ""
    files = []
    for dirpath, dirnames, filenames in os.walk(native):  # never follows links
        dirnames.sort()
        for f in sorted(filenames):
            files.append(Path(dirpath, f).relative_to(root).as_posix())
            if len(files) >= MAX_NATIVE_LINKS:
                break
        if len(files) >= MAX_NATIVE_LINKS:
            break
    items = []
    for f in files:
        if _inert(f.rpartition("/")[2]):
            items.append(f'<li><a href="{esc(url_part(f, safe="/"))}">{esc(f)}</a></li>')
        else:
            items.append(f"<li><code>{esc(f)}</code> <i>{_UNLINKED}</i></li>")
    more = "+" if len(files) >= MAX_NATIVE_LINKS else ""
    return f"<details><summary>native files ({len(files)}{more})</summary><ul>{''.join(items)}</ul></details>"


def _findings(failing: list[dict[str, Any]], unplaced: list[Mark]) -> Iterator[str]:
    if not failing:
        yield "<p>Every applicable check passes: what the harness recorded agrees with the wire.</p>"
        return
    yield '<ul class="findings">'
    for c in failing:
        shown, more = listed(c["reasons"])
        reasons = "".join(f"<li>{esc(shorten(x, 1000))}</li>" for x in [*shown, *([more] if more else [])])
        yield (
            f'<li data-check="{esc(c["id"])}"><b>{esc(LIES.get(c["id"], c["id"]))}</b> '
            f'<code>{esc(c["id"])}</code> <span class="badge fail">{esc(c["tier"])}</span>'
            f"<details><summary>{len(c['reasons'])} reason(s)</summary><ol>{reasons}</ol></details></li>"
        )
    yield "</ul>"
    if unplaced:
        yield f'<p class="meta">{len(unplaced)} reason(s) name no single row; they are listed above.</p>'


def render_episode(ev: Evidence, result: dict[str, Any], root: Path | None = None) -> str:
    """The page of one episode: `ev` its inputs, `result` its scenario_result; `root` its folder, for the links."""
    t = timeline(ev, result)
    name = f"{result.get('harness')}/{result.get('scenario')}"
    verdict = str(result.get("verdict"))
    links = ""
    if root is not None:
        names = (
            "scenario.json",
            "witness.jsonl",
            "rollout.json",
            "scenario_result.json",
            "harness.log",
            "proxy.log",
            "runtime.json",
        )
        links = " ".join(x for x in (_link(root, n) for n in names) if x) + _native_links(root)
    normalize = result.get("normalize") or {}
    parts = [
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">{csp(_JS)}',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(name)}: episode</title><style>{_CSS}</style></head><body>",
        '<p class="meta"><a href="../../report.html">← run report</a></p>',
        f'<h1><code>{esc(name)}</code> <span class="badge {esc(verdict)}">{esc(verdict)}</span></h1>',
        f'<p class="meta">run <code>{esc(str(result.get("run_id")))}</code> · '
        f"{esc(execution_text(result))} · normalize {esc(str(normalize.get('status')))}"
        f"{': ' + esc(shorten(str(normalize.get('message')), 300)) if normalize.get('message') else ''}</p>"
        if "execution" in result
        else "",
        f'<p class="meta">{links}</p>',
        "<h2>What its self-report gets wrong</h2>",
        *_findings(t.failing, t.unplaced),
        "<h2>Timeline: the wire beside the record</h2>",
        '<p class="meta">Rows are joined as the checks join them (orchestrator/checks/join.py). '
        '<button data-open="1">expand histories</button> <button data-open="0">fold histories</button></p>',
        *(
            f"<p><b>{esc(x)}</b> unavailable: {esc(shorten(str(ev.errors.get(x)), 400))}</p>"
            for x in ("witness", "rollout")
            if x in ev.errors
        ),
        '<table class="timeline"><thead><tr><th class="n">#</th><th>witnessed on the wire</th>'
        '<th>recorded by the harness</th><th class="marks">checks</th></tr></thead><tbody>',
    ]
    for n, r in enumerate(t.rows, 1):
        parts.extend(_row(n, r))
    for k, x in enumerate(t.unwitnessed_tools, 1):
        parts.append(_tool(f"+{k}", x))
    parts.append("</tbody></table>")
    if t.left_off:
        parts.append(f"<p>{t.left_off:,} more rows are not shown; the witness and rollout hold them.</p>")
    parts.append(f"<script>{_JS}</script></body></html>\n")
    return "".join(parts)


def write_episode_page(paths: EpisodePaths, result: dict[str, Any], ev: Evidence | None = None) -> Path | None:
    """Render the page into episode.html, from `ev` (the evidence the checks just read: an audit's is in memory) or
    else the episode's files; a page that cannot be made is logged, not raised (the verdicts stand without it)."""
    from orchestrator.evidence.jsonread import read_json
    from orchestrator.verdict import collect_evidence, read_rollout

    target = paths.root / PAGE
    try:
        if ev is None:
            scenario = read_json(paths.scenario)
            rollout, why = read_rollout(paths.rollout)
            ev = collect_evidence(scenario, paths, rollout, why)
        page = render_episode(ev, result, paths.root)
        tmp = target.with_name(f".{PAGE}.tmp")
        tmp.write_text(page, encoding="utf-8")
        os.replace(tmp, target)
        return target
    except Exception as exc:  # a page is a view: a harness's odd files must not turn a verdict into an error
        log.warning("episode page not written", episode=str(paths.root), error=f"{type(exc).__name__}: {exc}")
        return None
