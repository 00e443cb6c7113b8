"""An interrupted run's records: an episode the stop cut short is `interrupted` (never `fail`), and the partial
summary and every report say how far the run got."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from orchestrator.evidence import load_json, validate
from orchestrator.report import Interruption, build_summary, report_run, summary_bytes
from orchestrator.verdict import interrupted_result, result_skeleton
from tests.unit.report.conftest import RUN_ID, checks, make_suite, result, write_run

T0, T1 = "2025-01-01T12:00:00.000Z", "2025-01-01T12:30:00.000Z"
SCENARIOS = ["retry_429", "tool_failure", "tool_success"]


def _killed(scenario: str) -> dict[str, Any]:
    """What the stop's clean-up made of an honest episode: its harness killed (137), every check after it failing."""
    return result(
        "reference",
        scenario,
        "fail",
        checks(
            calls__outcome=("fail", ["witnessed attempt 2 is not recorded"]),
            outcome__final_answer=("fail", ["no final answer recorded"]),
        ),
        execution={"status": "exited", "exit_code": 137, "seconds": 3.5, "timeout_seconds": 300, "error": None},
    )


def _run(tmp_path: Path) -> tuple[Path, dict[str, Any], list[dict[str, Any]]]:
    suite = make_suite(["reference"], SCENARIOS)
    results = [
        result("reference", "tool_success", "pass", checks()),
        interrupted_result(_killed("retry_429"), "SIGINT"),
    ]
    run = write_run(tmp_path / "run", suite, results)
    return run.dir, suite, results


def test_a_killed_episode_is_interrupted_with_no_check_judged() -> None:
    cut = interrupted_result(_killed("retry_429"), "SIGTERM")
    validate(cut, "scenario-result/v1")
    assert cut["verdict"] == "interrupted"
    assert cut["execution"]["status"] == "interrupted"
    assert cut["execution"]["exit_code"] == 137  # kept: what happened, but the stop's doing, not the harness's
    assert "interrupted by SIGTERM" in cut["execution"]["error"]
    assert cut["checks"] == [] and cut["gate"] == {"P0": False}
    # A skeleton made for an episode the stop landed in before anything was judged is interrupted too.
    execution = {"status": "interrupted", "exit_code": None, "seconds": 0.0, "timeout_seconds": 300, "error": "x"}
    assert result_skeleton("reference", "tool_success", RUN_ID, "e", T0, execution)["verdict"] == "interrupted"


def test_the_partial_summary_counts_what_finished_what_was_cut_short_and_what_never_ran(tmp_path: Path) -> None:
    run_dir, suite, results = _run(tmp_path)
    summary = build_summary(run_dir, suite, results, True, T0, T1, Interruption("SIGINT"))
    assert summary["verdict"] == "interrupted" and summary["exit_code"] == 130
    assert summary["counts"]["interrupted"] == 1 and summary["counts"]["fail"] == 0
    assert summary["interrupted"] == {
        "signal": "SIGINT",
        "finished": 1,
        "interrupted": 1,
        "not_run": [{"harness": "reference", "scenario": "tool_failure"}],
    }
    # What never ran is not an error, nor missing: the stop, not the harness or the tool, is why.
    assert summary["missing"] == [] and summary["errors"] == []
    assert summary["harnesses"][0]["verdict"] == "interrupted"
    cut = next(e for e in summary["harnesses"][0]["scenarios"] if e["scenario"] == "retry_429")
    assert cut["first_failure"]["source"] == "execution" and "interrupted" in cut["first_failure"]["reason"]


def test_an_interrupted_episode_makes_the_run_interrupted_though_nobody_said_so(tmp_path: Path) -> None:
    # An audit or merge of a saved run holding one: the run it came from was stopped.
    run_dir, suite, results = _run(tmp_path)
    summary = build_summary(run_dir, suite, results, True, T0, T1)
    assert summary["verdict"] == "interrupted" and summary["interrupted"]["signal"] is None
    assert summary["interrupted"]["not_run"] == [{"harness": "reference", "scenario": "tool_failure"}]


def test_a_run_stopped_between_episodes_is_interrupted_with_every_finished_verdict_kept(tmp_path: Path) -> None:
    suite = make_suite(["reference"], SCENARIOS)
    failing = result("reference", "tool_failure", "fail", checks(tools__witness_output=("fail", ["differs"])))
    results = [result("reference", "tool_success", "pass", checks()), failing]
    run = write_run(tmp_path / "run", suite, results)
    summary = build_summary(run.dir, suite, results, True, T0, T1, Interruption("SIGTERM"))
    assert summary["verdict"] == "interrupted" and summary["exit_code"] == 130
    assert summary["counts"]["fail"] == 1  # a real failure before the stop stays one
    assert summary["interrupted"]["finished"] == 2 and summary["interrupted"]["interrupted"] == 0


def test_a_run_that_was_not_interrupted_has_no_trace_of_it(tmp_path: Path) -> None:
    # Every other summary stays byte for byte what it was (published results are compared so).
    suite = make_suite(["reference"], ["tool_success"])
    results = [result("reference", "tool_success", "pass", checks())]
    run = write_run(tmp_path / "run", suite, results)
    summary = build_summary(run.dir, suite, results, True, T0, T1)
    assert "interrupted" not in summary and "interrupted" not in summary["counts"]
    assert b"interrupted" not in summary_bytes(summary)


def test_every_report_of_a_partial_run_says_it_was_interrupted(tmp_path: Path) -> None:
    run_dir, suite, results = _run(tmp_path)
    code = report_run(run_dir, suite, results, full_suite=True, started_at=T0, finished_at=T1,
                      interrupted=Interruption("SIGINT"))  # fmt: skip
    assert code == 130
    summary = load_json(run_dir / "summary.json", "probe-summary/v1")
    assert summary["verdict"] == "interrupted"
    md = (run_dir / "report.md").read_text()
    assert "## Interrupted" in md and "interrupted by SIGINT: 1 episode\\(s\\) finished, 1 interrupted" in md
    assert "Did not run: reference/tool\\_failure" in md
    assert "⏸ interrupted" in md and "(exit code 130)" in md
    assert "failing check" not in md  # the killed episode's checks were never judged, so none is listed
    html = (run_dir / "report.html").read_text()
    assert "<h2>Interrupted</h2>" in html and 'class="badge interrupted"' in html
    suites = ET.fromstring((run_dir / "junit.xml").read_bytes())
    assert suites.get("failures") == "0" and suites.get("errors") == "0"
    cases = {(c.get("classname"), c.get("name")): c for c in suites.iter("testcase")}
    cut = cases[("reference.retry_429", "execution")].find("skipped")
    assert cut is not None and "interrupted" in (cut.get("message") or "")
    never = cases[("reference.tool_failure", "execution")].find("skipped")
    assert never is not None and "not run" in (never.get("message") or "")
    saved = json.loads((run_dir / "reference" / "retry_429" / "scenario_result.json").read_text())
    assert saved["verdict"] == "interrupted"


def test_the_partial_summary_s_own_record_is_the_only_one_at_the_root(tmp_path: Path) -> None:
    # contrib/slurm/merge.sbatch tells a partial shard from a whole one by this line alone (no JSON reader there).
    run_dir, suite, results = _run(tmp_path)
    text = summary_bytes(build_summary(run_dir, suite, results, True, T0, T1, Interruption("SIGTERM"))).decode()
    assert [line for line in text.splitlines() if line.startswith('  "interrupted"')] == ['  "interrupted": {']
