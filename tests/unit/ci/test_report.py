"""`ci report` on a table of probe outputs: pass / fail / unavailable per harness, Markdown, exit 0/1/2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from orchestrator.ci.report import Row, collect, exit_code, md_text, render_markdown
from orchestrator.report import build_summary, summary_bytes
from tests.unit.ci.conftest import hp
from tests.unit.report.conftest import NASTY, checks, make_suite, result, write_run

T0, T1 = "2025-01-01T12:00:00.000Z", "2025-01-01T12:30:00.000Z"


def _run(root: Path, name: str, results: list[dict[str, Any]], *, summary: bool = True, command: str = "") -> Path:
    harnesses = sorted({r["harness"] for r in results}) or ["hermes"]
    suite = make_suite(harnesses, ["tool_success", "tool_failure"])
    if command:
        suite["command"] = command
    run = write_run(root / name, suite, results)
    if summary:
        s = build_summary(run.dir, suite, results, True, T0, T1)
        (run.dir / "summary.json").write_bytes(summary_bytes(s))
    return run.dir


def passing(h: str) -> list[dict[str, Any]]:
    return [result(h, s, "pass", checks()) for s in ("tool_success", "tool_failure")]


def failing(h: str) -> list[dict[str, Any]]:
    bad = checks(tools__witness_output=("fail", [NASTY]))
    return [result(h, "tool_success", "pass", checks()), result(h, "tool_failure", "fail", bad)]


def erroring(h: str) -> list[dict[str, Any]]:
    ex = {"status": "error", "exit_code": None, "seconds": 0, "timeout_seconds": 300, "error": "image did not build"}
    return [result(h, "tool_success", "pass", checks()), result(h, "tool_failure", "error", [], execution=ex)]


def _leg(root: Path, name: str, harness: str, code: int | None, results: list[dict[str, Any]] | None) -> Path:
    leg = root / name
    leg.mkdir()
    (leg / "leg.json").write_text(
        json.dumps({"schema": "ci-leg/v1", "harness": harness, "runtime": "docker", "exit_code": code})
    )
    if results is not None:
        _run(leg, "run", results)
    return leg


CASES: list[tuple[str, Any, int, dict[str, str]]] = [
    ("one pass", lambda d: [_run(d, "a", passing("pi"))], 0, {"pi": "pass"}),
    ("one fail", lambda d: [_run(d, "a", failing("pi"))], 1, {"pi": "fail"}),
    ("episode error is unavailable", lambda d: [_run(d, "a", erroring("pi"))], 2, {"pi": "unavailable"}),
    ("no summary (interrupted)", lambda d: [_run(d, "a", passing("pi"), summary=False)], 2, {"pi": "unavailable"}),
    ("missing episode", lambda d: [_run(d, "a", passing("pi")[:1])], 2, {"pi": "unavailable"}),
    (
        "pass + fail",
        lambda d: [_run(d, "a", passing("pi")), _run(d, "b", failing("codex"))],
        1,
        {"pi": "pass", "codex": "fail"},
    ),
    (
        "pass + fail + unavailable",
        lambda d: [_run(d, "a", passing("pi")), _run(d, "b", failing("codex")), _run(d, "c", erroring("hermes"))],
        2,
        {"pi": "pass", "codex": "fail", "hermes": "unavailable"},
    ),
    ("leg exit 1 with its summary", lambda d: [_leg(d, "l", "pi", 1, failing("pi"))], 1, {"pi": "fail"}),
    ("leg exit 2 with no run dir", lambda d: [_leg(d, "l", "pi", 2, None)], 2, {"pi": "unavailable"}),
    ("leg exit 2 with a passing summary", lambda d: [_leg(d, "l", "pi", 2, passing("pi"))], 2, {"pi": "unavailable"}),
    ("leg never ran", lambda d: [_leg(d, "l", "pi", None, None)], 2, {"pi": "unavailable"}),
]


@pytest.mark.parametrize(("build", "code", "statuses"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_table(tmp_path: Path, build: Any, code: int, statuses: dict[str, str]) -> None:
    rows = collect(build(tmp_path), [])
    assert {r.harness: r.status for r in rows} == statuses
    assert exit_code(rows) == code


def test_summary_exit_2_with_errors_named_under_the_harness_is_unavailable(tmp_path: Path) -> None:
    # A merged run whose results all passed but could not be joined: exit 2, every error under the harness's name.
    run = _run(tmp_path, "m", passing("pi"))
    summary = json.loads((run / "summary.json").read_text())
    summary.update(exit_code=2, verdict="error", errors=["pi/tool_success: run_id 'x' is not the suite's 'y'"])
    (run / "summary.json").write_text(json.dumps(summary))
    (row,) = collect([run], [])
    assert row.status == "unavailable" and row.note == "pi/tool_success: run_id 'x' is not the suite's 'y'"
    assert exit_code([row]) == 2
    # Exit 2 alone, with no error to name, is no pass either.
    summary.update(errors=[])
    (run / "summary.json").write_text(json.dumps(summary))
    (row,) = collect([run], [])
    assert (row.status, row.note) == ("unavailable", "the probe's summary says exit 2")


def test_exit_2_blamed_on_one_harness_leaves_the_others_measured(tmp_path: Path) -> None:
    # One run of two harnesses: codex's result could not be joined (an error under its name), pi's passed.
    run = _run(tmp_path, "m", passing("pi") + passing("codex"))
    summary = json.loads((run / "summary.json").read_text())
    summary.update(exit_code=2, verdict="error", errors=["codex/tool_success: run_id 'x' is not the suite's 'y'"])
    (run / "summary.json").write_text(json.dumps(summary))
    assert {r.harness: r.status for r in collect([run], [])} == {"pi": "pass", "codex": "unavailable"}


def test_suite_command_with_an_unbalanced_quote_leaves_the_runtime_unknown(tmp_path: Path) -> None:
    (row,) = collect([_run(tmp_path, "a", passing("pi"), command="harness-probe run -H pi 'unterminated")], [])
    assert (row.runtime, row.status) == ("?", "pass")


@pytest.mark.parametrize(
    "change",
    [
        {"options": {"model": "x\n  ```\n\n<img src=x onerror=alert(1)> [c](https://evil.example) @everyone\n```"}},
        {"scenarios_failed": ["a\n```\n# INJECTED @everyone"]},
        {"options": {"k\x1b[31m": "v"}},
    ],
    ids=["option value", "scenario name", "option key"],
)
def test_control_characters_in_rerun_arguments_give_no_rerun_command(change: dict[str, Any]) -> None:
    row = Row("pi", "docker", "fail", "a\nb", scenarios_run=2, first_failure="tool_failure: x: y")
    for key, value in change.items():
        setattr(row, key, value)
    assert row.rerun() is None
    md = render_markdown([row], "https://ci.example/{harness}/{runtime}/{dir}")
    assert "```" not in md and "<img" not in md and "](https://evil" not in md and "\x1b" not in md
    assert "holds a control character" in md
    assert "(https://ci.example/pi/docker/a%0Ab)" in md  # the artifact link cannot be broken either


def test_expected_harness_without_output_is_unavailable(tmp_path: Path) -> None:
    rows = collect([_run(tmp_path, "a", passing("pi"))], ["pi", "hermes"])
    assert {r.harness: r.status for r in rows} == {"pi": "pass", "hermes": "unavailable"}
    assert exit_code(rows) == 2
    assert collect([], []) == [] and exit_code([]) == 0
    # Matrix legs: the reference harness measured under docker does not stand for its podman leg.
    legs = collect([_leg(tmp_path, "l", "reference", 0, passing("reference"))], [("reference", "docker"),
                                                                                 ("reference", "podman")])  # fmt: skip
    assert [(r.runtime, r.status) for r in legs] == [("docker", "pass"), ("podman", "unavailable")]


def test_fail_row_names_first_failure_count_and_rerun(tmp_path: Path) -> None:
    (row,) = collect([_run(tmp_path, "a", failing("hermes"))], [])
    assert (row.scenarios_run, row.scenarios_failed) == (2, ["tool_failure"])
    assert row.first_failure == f"tool_failure: tools.witness_output: {NASTY}"
    assert row.rerun() == "harness-probe run -H hermes -a model=probe-model -s tool_failure -o probe-out/hermes-rerun"
    (err,) = collect([_run(tmp_path, "b", erroring("pi"), command="harness-probe run -H pi --runtime podman -o x")], [])
    assert err.first_failure == "tool_failure: execution: image did not build"
    assert err.runtime == "podman" and "--runtime podman" in err.rerun()


def test_markdown_is_inert_and_links_evidence(tmp_path: Path) -> None:
    rows = collect([_run(tmp_path, "hc-pi", failing("pi"))], ["hermes"])
    md = render_markdown(rows, "https://ci.example/runs/7/artifacts?name={dir}")
    assert md.startswith("## Harness conformance P0: 0 passed, 1 failed, 1 unavailable\n")
    assert "<script>" not in md and "\x1b" not in md
    assert "&lt;script&gt;" in md
    assert "(https://ci.example/runs/7/artifacts?name=hc-pi)" in md
    assert "harness-probe run -H pi -s tool_failure -o probe-out/pi-rerun" in md
    assert "1 of 2" in md
    assert md_text("@team [x](http://evil) | `y`\nz") == r"&#64;team \[x\]\(http://evil\) \| \`y\` z"
    assert "nothing was probed" in render_markdown([])


def test_cli_exit_codes_and_check_json(tmp_path: Path) -> None:
    ok, bad = _run(tmp_path, "a", passing("pi")), _run(tmp_path, "b", failing("codex"))
    res = hp("ci", "report", str(ok))
    assert res.returncode == 0, res.stderr
    check = tmp_path / "check.json"
    res = hp("ci", "report", str(ok), str(bad), "--check-json", str(check), "-o", str(tmp_path / "body.md"))
    assert res.returncode == 1, res.stderr
    body = json.loads(check.read_text())
    assert (body["name"], body["conclusion"]) == ("Harness conformance P0", "failure")
    assert body["output"]["summary"] == (tmp_path / "body.md").read_text() == res.stdout
    res = hp("ci", "report", str(ok), "--expect-json", '["pi", "hermes"]')
    assert res.returncode == 2
    res = hp("ci", "report", str(tmp_path / "absent"))
    assert res.returncode == 2
    assert res.stdout.startswith("## Harness conformance P0: 0 passed, 0 failed, 1 unavailable\n")
    assert "not a directory" in res.stderr
    res = hp("ci", "report", str(ok), "--expect-json", '[{"harness": "pi", "runtime": "docker"}]')
    assert res.returncode == 0, res.stderr
    res = hp("ci", "report", "--expect-json", '[{"harness": 1}]')
    assert res.returncode == 2
    res = hp("ci", "report", "--expect-json", "[]")
    assert res.returncode == 0 and "nothing was probed" in res.stdout
