"""A results page's "Pinned X beside newest Y" section: the saved newest-release run next to the pinned one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from orchestrator.evidence import load_json
from orchestrator.report.markdown import _code, _verdict, md
from orchestrator.report.overrides import override_text, overrides_of
from orchestrator.report.table import SYMBOLS

__all__ = ["NEWEST", "newest_section"]

# The folder below docs/results/runs/<harness>/ that `results publish --as newest` saves into.
NEWEST = "newest"


def _entry(summary: dict[str, Any], harness: str) -> dict[str, Any]:
    found: dict[str, Any] = next((h for h in summary["harnesses"] if h["name"] == harness), {})
    return found


def _by_scenario(summary: dict[str, Any], harness: str) -> dict[str, dict[str, Any]]:
    return {str(s["scenario"]): s for s in _entry(summary, harness).get("scenarios", [])}


def _status(status: str) -> str:
    # "absent": the check was not in that result at all (drift's word for it).
    return f"{SYMBOLS[status]} {status}" if status in SYMBOLS else status


def newest_section(saved: Path, harness: str, pinned: dict[str, Any], was: object) -> list[str]:
    """The section's lines for the pinned run saved in `saved` (its summary `pinned`, the version that ran `was`),
    or none when no newest run is saved beside it. The version the newest run ran is its override record's; the
    checks that changed are drift's own comparison of the two summaries' scenario results."""
    from orchestrator.variants.drift import compare_results  # loaded on use: most pages have no newest run

    folder = saved / NEWEST
    if harness == NEWEST or not (folder / "summary.json").is_file():
        return []
    newest = load_json(folder / "summary.json", "probe-summary/v1")
    override = overrides_of(newest).get(harness, {})
    now = override.get("ran") or override.get("version")
    report = compare_results(harness, _by_scenario(pinned, harness), _by_scenario(newest, harness), "pinned, newest")
    lines = [
        f"## Pinned {_code(str(was))} beside newest {_code(str(now))}",
        "",
        f"The newest release's run {_code(str(newest['run_id']))}, saved by `results publish RUN -H NAME --as newest` "
        f"beside the pinned run above; its verdict: **{_entry(newest, harness).get('verdict')}**.",
        "",
        *([f"- {md(override_text(harness, override), 600)}", ""] if override else []),
        f"| scenario | pinned {_code(str(was))} | newest {_code(str(now))} | checks whose status differs |",
        "| --- | --- | --- | --- |",
    ]
    for scenario, (a, b) in report.verdicts.items():
        changed = [c for c in report.changes if c.scenario == scenario]
        cell = (
            "; ".join(f"{_code(c.check)} [{c.tier}]: {_status(c.before)} → {_status(c.after)}" for c in changed)
            or "no check changed"
        )
        lines.append(f"| {_code(scenario)} | {_verdict(a)} | {_verdict(b)} | {cell} |")
    n, p0 = len(report.changes), len(report.p0_regressions)
    lines += [
        "",
        f"{n} check result(s) changed status, {p0} P0 regression(s)."
        if n
        else "No check changed status in any scenario compared.",
        "",
    ]
    if report.errors:
        lines += [*(f"- not compared: {md(e)}" for e in report.errors), ""]
    return lines
