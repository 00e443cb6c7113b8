"""docs/results/<harness>.md: one harness's measured results, generated from a saved run, never written by hand."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

from orchestrator.evidence import load_json
from orchestrator.evidence.jsonread import read_json
from orchestrator.report.markdown import _check_table, _scenario_table, md
from orchestrator.report.results_notes import MATRIX_NOTES
from orchestrator.report.table import LEGEND, SYMBOLS, joined, views

__all__ = ["FINDINGS", "render_results"]

# What a failing check says about the harness's self-report, in plain language.
FINDINGS: dict[str, str] = {
    "rollout.format": "its record does not have the shape of a rollout at all",
    "calls.present": "no model call is recorded",
    "calls.identity": "model calls have no (unique) ids",
    "calls.protocol": "model calls do not name their provider protocol",
    "calls.timing": "model calls lack start/end times, or they are out of order",
    "calls.outcome": "a call is neither a success with response id and finish reason nor an error with a status",
    "tokens.fields": "token counts are malformed (negative or not numbers)",
    "invocations.identity": "no session/invocation owns the calls",
    "steps.numbering": "agent steps are missing or not numbered 1, 2, 3...",
    "tools.record": "tool executions are missing, or lack status or output",
    "outcome.fields": "how the run ended (final answer or error) is not recorded",
    "history.rebuildable": "the model-visible history cannot be rebuilt (tool results missing or out of order)",
    "invocations.parent": "invocation parent links do not resolve",
    "ownership.call_owner": "some model calls are not owned by exactly one invocation",
    "steps.call_refs": "steps do not reference the calls made for them",
    "steps.attempt_accounting": "some model calls (retries included) belong to no step, or to several",
    "tools.request_join": "tool records do not join to the tool calls that requested them",
    "gaps.none_voiding": "it does not report facts an evidence label needs (named gaps)",
    "witness.no_violations": "it broke the scripted conversation (requests out of script)",
    "witness.tools_executed": "scripted tool calls did not really run",
    "witness.results_seen": "tool outputs were not returned to the model",
    "witness.final_answer_sent": "it stopped before reaching the final answer",
    "attempts.multiset": "model attempts seen on the wire are missing from its record (often failed ones), or doubled",
    "calls.response_metadata": "finish reasons or protocols differ from what the provider sent",
    "tokens.match": "token counts differ from the usage the provider sent (or unknown counts are made up)",
    "errors.payload_retained": "error payloads of failed attempts are not kept",
    "steps.witness_attempts": "retries are not kept as attempts of the step they retried",
    "attempts.retry_identical": "a retry did not resend the identical request",
    "tools.witness_ids": "tool calls the model made are missing from its tool records (or extra ones appear)",
    "tools.witness_request": "tool names or arguments differ from what the model sent",
    "tools.witness_status": "tool status does not follow the command's exit code",
    "tools.witness_output": "recorded tool output differs from what the model was shown",
    "outcome.final_answer": "the recorded final answer differs from the one the provider sent",
    "outcome.terminal_error": "a run where every model call failed is not recorded as an error",
    "egress.none": "it tried to reach hosts other than the provider (telemetry, update checks)",
    "witness.faults_played": "the scenario's scripted faults were not all played: it was not exercised",
    "attempts.exchange": "a recorded call is not the exchange the wire shows (status, category, request or order)",
    "calls.witness_times": "recorded call times do not fit the times the requests crossed the wire",
    "history.witness_results": "the history's tool results differ from what the model saw on the wire",
    "ownership.wire_sessions": "invocation ownership disagrees with the session header on the wire",
    "tokens.totals_match": "session or step token totals disagree with the calls or with the wire",
    "compaction.recorded": "pushed to its context limit, it never compacted, or did not record the compaction",
    "process.exit_status": "its exit status says the opposite of how the episode ended (e.g. 0 after a terminal error)",
}


def _runtime(run_dir: Path, harness: str) -> dict[str, Any] | None:
    for path in sorted(run_dir.glob(f"{harness}/**/runtime.json")):
        data: dict[str, Any] = read_json(path)
        return data
    return None


def published_command(command: str) -> str:
    """The command that made a run, as a page shows it: its output folder (a path on the machine that ran it,
    often a temporary one) written as OUT, everything else as run."""
    try:
        words = shlex.split(command)
    except ValueError:
        return command
    out: list[str] = []
    for i, w in enumerate(words):
        if i and words[i - 1] in ("-o", "--output"):
            out.append("OUT")
        elif w.startswith("--output="):
            out.append("--output=OUT")
        else:
            out.append(w)
    return shlex.join(out)


def render_results(run_dir: Path, harness: str, regenerate: str) -> str:
    """The page for `harness` from the run in `run_dir`; `regenerate` is the command that rewrites it."""
    summary = load_json(run_dir / "summary.json", "probe-summary/v1")
    suite = load_json(run_dir / "suite.json", "suite/v1")
    tables = [t for t in views(summary) if t.name == harness]
    if not tables:
        raise ValueError(f"the run in {run_dir} has no results for harness {harness!r}")
    t = tables[0]
    rt = _runtime(run_dir, harness)
    lines = [
        f"# {md(harness)}: probe results",
        "",
        f"Generated by `{regenerate}`.",
        "",
        f"- run: `{summary['run_id']}`, made with `{published_command(suite.get('command') or 'harness-probe run')}`",
        f"- harness version: `{(rt or {}).get('harness', {}).get('version')}`",
        f"- image: `{(rt or {}).get('harness', {}).get('tag')}` (`{(rt or {}).get('harness', {}).get('image_id')}`)",
        f"- proxy: `{(rt or {}).get('proxy', {}).get('version')}`; profile `{summary['profile']}`; "
        f"harness-probe {summary['tool_version']}",
        f"- full catalogue: {'yes' if summary['full_suite'] else 'no'}; verdict: **{t.verdict}**",
        *([f"- {(run_dir / 'audited').read_text().strip()}"] if (run_dir / "audited").is_file() else []),
        "",
        "## What its self-report gets wrong",
        "",
    ]
    failing: dict[str, list[str]] = {}
    example: dict[str, str] = {}
    for e in t.episodes():
        for c in e["checks"]:
            if c["status"] == "fail" and not (c["reasons"] and c["reasons"][0].startswith("blocked")):
                failing.setdefault(c["id"], []).append(e["scenario"])
                example.setdefault(c["id"], f"{e['scenario']}: {c['reasons'][0]}" if c["reasons"] else "")
    if not failing:
        lines.append("Nothing: every applicable check passes in every scenario.")
    for cid, scenarios in failing.items():
        finding = FINDINGS.get(cid, cid)
        lines.append(f"- {finding} (`{cid}`; in {', '.join(f'`{s}`' for s in scenarios)})")
        if example[cid]:
            lines.append(f"  - for example, {md(example[cid], 240)}")
    blocked = sum(
        1 for e in t.episodes() for c in e["checks"] if c["status"] == "fail" and c["reasons"][0].startswith("blocked")
    )
    if blocked:
        lines.append(f"- and {blocked} check results blocked by these failures")
    lines += [
        "",
        "## Checks by scenario",
        "",
        "Legend: " + ", ".join(f"{SYMBOLS[status]} {text}" for status, text in LEGEND),
        "",
        "".join(joined(_check_table(t))),
        "",
        "## Episodes",
        "",
        "".join(joined(_scenario_table(t))),
        "",
    ]
    return "\n".join(lines)


LABELS = tuple(f"E{i}" for i in range(1, 11))


def _labels_of(check: dict[str, Any]) -> set[str]:
    """The labels a check result speaks for: a blocked result speaks for none (its blocker is counted), and a
    failed gap check only for the labels its gaps void."""
    if check["status"] == "fail" and check["reasons"] and check["reasons"][0].startswith("blocked by"):
        return set()
    if check["id"] == "gaps.none_voiding" and check["status"] == "fail":
        voided = " ".join(re.findall(r"\(voids ([^)]*)\)", " ".join(check["reasons"])))
        return set(re.findall(r"E10|E[1-9]", voided))
    return set(check.get("evidence", []))


def _cell(statuses: list[str]) -> str:
    failed = sum(1 for s in statuses if s == "fail")
    return f"✗ {failed}" if failed else ("✓" if "pass" in statuses else "—")


def label_matrix(summaries: dict[str, dict[str, Any]]) -> str:
    """docs/results/README.md: every probed harness x evidence label, from the saved runs only."""
    lines = [
        "# Probed harnesses: evidence matrix",
        "",
        "Generated by `harness-probe results matrix` from the saved runs in `docs/results/runs/`; "
        "each harness's page has the check-by-scenario table.",
        "",
        "A label is ✓ when every applicable check carrying it passed in every scenario of the run, "
        "✗ with the number of failing check results otherwise (results blocked by another failure are not "
        "counted; a gap counts against the labels it voids), — when no check with it applied. "
        "The process column is the harness's exit status, judged apart from every label.",
        "",
        "| harness | version | " + " | ".join(LABELS) + " | process | verdict |",
        "| --- | --- | " + " | ".join(":---:" for _ in LABELS) + " | :---: | --- |",
    ]
    for name, (summary, version) in sorted((n, (s["summary"], s["version"])) for n, s in summaries.items()):
        harness = next(h for h in summary["harnesses"] if h["name"] == name)
        cells = []
        for label in LABELS:
            statuses = [c["status"] for e in harness["scenarios"] for c in e["checks"] if label in _labels_of(c)]
            cells.append(_cell(statuses))
        cells.append(_cell([c["status"] for e in harness["scenarios"] for c in e["checks"] if c["kind"] == "process"]))
        lines.append(f"| [{name}]({name}.md) | `{version}` | " + " | ".join(cells) + f" | {harness['verdict']} |")
    lines += ["", MATRIX_NOTES]
    return "\n".join(lines)
