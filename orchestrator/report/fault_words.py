"""The results page's words on the provider faults of catalogue II: per scenario, what the harness did and what each
check judging it found, from the run's summary alone (so an audit of the published evidence renders it again)."""

from __future__ import annotations

from typing import Any

from orchestrator.report.markdown import md

__all__ = ["SCENARIOS", "fault_section"]

# The checks that judge each scenario, in the order its sentence names them (docs/checks.md's table).
SCENARIOS: dict[str, tuple[str, ...]] = {
    "overloaded_529": (
        "attempts.multiset",
        "errors.payload_retained",
        "steps.witness_attempts",
        "attempts.exchange",
        "error.propagated",
    ),
    "retry_after": ("retry.waited", "retry.wait_recorded", "attempts.multiset", "errors.payload_retained"),
    "quota_window": (
        "witness.faults_played",
        "retry.waited",
        "retry.wait_recorded",
        "attempts.multiset",
        "steps.witness_attempts",
    ),
    "length_cut": ("calls.response_metadata", "error.propagated", "outcome.final_answer"),
    "tool_args_truncated": ("tools.args_not_run", "history.witness_results"),
    "sse_malformed": ("attempts.multiset", "attempts.exchange", "error.propagated", "outcome.final_answer"),
    "stream_error_event": ("attempts.multiset", "attempts.exchange", "error.propagated", "outcome.final_answer"),
    "body_not_json": ("attempts.multiset", "attempts.exchange", "error.propagated", "outcome.final_answer"),
}

# What a pass of each says, in words.
_PASSED = {
    "attempts.multiset": "kept every attempt the wire shows, each failed one as failed",
    "errors.payload_retained": "kept each error payload",
    "steps.witness_attempts": "kept each retry in the step it retried",
    "attempts.exchange": "recorded each exchange as the wire shows it",
    "error.propagated": "its outcome names the fault it ended on",
    "retry.waited": "waited as long as the provider asked before retrying",
    "retry.wait_recorded": "the wait it records is the wait the wire shows",
    "witness.faults_played": "met the fault",
    "calls.response_metadata": "kept the finish reason the provider sent",
    "outcome.final_answer": "asked again and reported the whole answer",
    "tools.args_not_run": "did not run the truncated command, and its record shows the malformed call as sent",
    "history.witness_results": "its history gives each result and each call's arguments as the wire carried them",
}


def _said(check: dict[str, Any]) -> str | None:
    """One check's verdict in words; None when there is nothing to say (outside its scope, blocked)."""
    status, reasons = check["status"], check.get("reasons") or []
    if status == "pass":
        return f"{_PASSED.get(check['id'], 'passes')} (`{check['id']}`)"
    if status == "fail" and reasons and not reasons[0].startswith("blocked by"):
        more = f" (and {len(reasons) - 1} more)" if len(reasons) > 1 else ""
        return f"**{md(reasons[0], 200)}**{more} (`{check['id']}`)"
    if status == "not_applicable" and reasons and reasons[0].startswith("gap "):
        return f"not judged: {md(reasons[0].split(': ', 1)[-1], 160)} (`{check['id']}`)"
    return None


def _path(checks: dict[str, dict[str, Any]]) -> str:
    """Whether the harness recovered from the fault or ended on it, as the checks applied say."""
    ended = checks.get("error.propagated", {}).get("status")
    if ended in ("pass", "fail"):
        return "ended on the fault"
    reached = [checks.get(c, {}).get("status") for c in ("witness.final_answer_sent", "outcome.final_answer")]
    if "pass" in reached:
        return "recovered to the final answer"
    return "did not reach the final answer" if "fail" in reached else "recovered"


def fault_section(episodes: list[dict[str, Any]]) -> list[str]:
    """`## Provider faults, in words`: one line per catalogue II scenario the run played; none when it played none."""
    by_name = {e["scenario"]: e for e in episodes if e["scenario"] in SCENARIOS}
    if not by_name:
        return []
    lines = [
        "## Provider faults, in words",
        "",
        "What it did with each fault of the second catalogue, and what each check judging that scenario found "
        "(a check outside the episode's scope, or blocked by another failure, is left out).",
        "",
    ]
    for name in SCENARIOS:
        episode = by_name.get(name)
        if episode is None:
            continue
        checks = {c["id"]: c for c in episode.get("checks") or []}
        if not checks:
            lines.append(f"- `{name}` ({episode['verdict']}): not judged: {md(str(episode['execution'].get('error')))}")
            continue
        said = [s for s in (_said(checks[c]) for c in SCENARIOS[name] if c in checks) if s]
        lines.append(f"- `{name}` ({episode['verdict']}): {_path(checks)}; " + "; ".join(said) + ".")
    return [*lines, ""]
