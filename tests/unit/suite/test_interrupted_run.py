"""A run stopped by Ctrl-C or SIGTERM: the episodes it cut short are `interrupted` (never judged into a fail) with
--jobs 1 and side by side, its partial summary is written, and audit and merge keep the status."""

from __future__ import annotations

import _thread
import json
import shutil
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from orchestrator import stop, suite
from orchestrator.audit import audit
from orchestrator.evidence import load_json
from orchestrator.harnesses import get_harness
from orchestrator.images import BuiltImage
from orchestrator.merge import merge_runs
from orchestrator.paths import RunPaths
from orchestrator.report import Interruption, build_summary, report_run, summary_bytes
from orchestrator.scenarios import load_scenario
from orchestrator.verdict import interrupted_result
from tests.unit.checks.conftest import FIXTURES
from tests.unit.report.conftest import RUN_ID, checks, make_suite, result, write_run

T0, T1 = "2025-01-01T12:00:00.000Z", "2025-01-01T12:30:00.000Z"
GRID = ["tool_success", "tool_failure", "retry_429", "model_error"]
IMAGE = BuiltImage("reference", "harness-probe/reference:x", "sha256:" + "a" * 64, "b" * 64, {}, False, 0.0)


class _Engine:
    """The run's clean-up ends every running harness (its containers are gone): `killed` tells the fakes."""

    def __init__(self) -> None:
        self.killed = threading.Event()
        self.cleanups = 0

    def cleanup(self, _run_id: str) -> None:
        self.cleanups += 1
        self.killed.set()


class _Ahead:
    def __init__(self, _engine: Any, planners: Any, _order: Any = None) -> None:
        self.count = len(planners)

    def __enter__(self) -> _Ahead:
        return self

    def __exit__(self, *_: Any) -> None:
        pass

    def begin(self, index: int) -> tuple[Any, None]:
        plan = SimpleNamespace(
            index=index,
            episode_id=f"hp-{RUN_ID}-{index}",
            started=T0,
            execution={"status": "error", "exit_code": None, "seconds": 0.0, "timeout_seconds": 300.0, "error": None},
        )
        return plan, None

    def set_up_next(self) -> None:
        pass


@pytest.fixture(autouse=True)
def _ctrl_c_raises() -> Iterator[None]:
    # _thread.interrupt_main() does nothing where SIGINT is ignored, as a shell leaves it for a job started in the
    # background (`make test &`): the tests' Ctrl-C gets Python's own handler, whatever the parent left.
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def _killed(scenario: str) -> dict[str, Any]:
    return result(
        "reference",
        scenario,
        "fail",
        checks(calls__outcome=("fail", ["witnessed attempt 2 is not recorded"])),
        execution={"status": "exited", "exit_code": 137, "seconds": 2.0, "timeout_seconds": 300, "error": None},
    )


def _episodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int, play: Any) -> tuple[Any, dict[int, Any]]:
    monkeypatch.setattr(suite, "PodsAhead", _Ahead)
    monkeypatch.setattr(suite, "image_version", lambda *_: "reference 1.0")
    monkeypatch.setattr(suite, "play_episode", play)
    monkeypatch.setattr(suite, "received_signal", lambda: "SIGINT")
    monkeypatch.setattr(stop, "received_signal", lambda: "SIGINT")
    h = get_harness("reference")
    scenarios = [load_scenario(s) for s in GRID]
    cfg = suite.RunConfig([h], scenarios, tmp_path / "out", jobs=jobs)
    out = RunPaths(cfg.output)
    cfg.output.mkdir()
    plan = make_suite(["reference"], GRID)
    (cfg.output / "suite.json").write_text(json.dumps(plan))
    engine = _Engine()
    done: dict[int, Any] = {}
    grid = [(h, sc) for sc in scenarios]
    with pytest.raises(KeyboardInterrupt):
        suite._episodes(cfg, engine, out, RUN_ID, plan, {"reference": IMAGE}, {"proxy": IMAGE}, None, grid, done,  # type: ignore[arg-type]
                        T0, None, None)  # fmt: skip
    stopped = suite._stopped(cfg, out, RUN_ID, plan, grid, done, T0)
    return stopped, done


def test_side_by_side_the_episodes_the_stop_killed_are_interrupted_not_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    both_running = threading.Barrier(2)

    def play(engine: _Engine, plan: Any, *_: Any, **__: Any) -> dict[str, Any]:
        scenario = GRID[plan.index]
        if plan.index == 0:
            return result("reference", scenario, "pass", checks())
        both_running.wait(timeout=30)
        if plan.index == 2:
            _thread.interrupt_main()  # Ctrl-C, while episodes 1 and 2 run and 3 waits for a slot
        assert engine.killed.wait(timeout=30)
        # What the episode makes of the evidence its killed harness left: 137 and failing checks.
        r = _killed(scenario)
        (tmp_path / "out" / "reference" / scenario).mkdir(parents=True, exist_ok=True)
        (tmp_path / "out" / "reference" / scenario / "scenario_result.json").write_text(json.dumps(r))
        return r

    # Episode 0 ends before 1 and 2 hold both slots: nothing is stopped until both run.
    stopped, done = _episodes(tmp_path, monkeypatch, 2, play)
    assert {i: r["verdict"] for i, r in done.items()} == {0: "pass", 1: "interrupted", 2: "interrupted"}
    for name in ("tool_failure", "retry_429"):
        saved = load_json(tmp_path / "out" / "reference" / name / "scenario_result.json", "scenario-result/v1")
        assert saved["verdict"] == "interrupted" and saved["checks"] == []
        assert saved["execution"]["exit_code"] == 137 and saved["execution"]["status"] == "interrupted"
    assert (stopped.finished, stopped.interrupted, stopped.not_run) == (1, 2, 1)
    assert stopped.result.exit_code == 130
    message = stopped.message()
    assert "interrupted by SIGINT: 1 of 4 episode(s) finished, 2 interrupted" in message
    assert "1 did not run" in message and str((tmp_path / "out").resolve()) in message
    summary = load_json(tmp_path / "out" / "summary.json", "probe-summary/v1")
    assert summary["verdict"] == "interrupted" and summary["exit_code"] == 130
    assert summary["counts"]["fail"] == 0 and summary["counts"]["interrupted"] == 2
    assert summary["interrupted"]["not_run"] == [{"harness": "reference", "scenario": "model_error"}]


def test_with_jobs_1_the_episode_the_stop_lands_in_is_interrupted_and_the_rest_never_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def play(_engine: _Engine, plan: Any, *_: Any, **__: Any) -> dict[str, Any]:
        if plan.index == 1:
            # The next episode's plan was made ahead while this harness ran: its folder exists, nothing ran in it.
            ahead = tmp_path / "out" / "reference" / GRID[2]
            ahead.mkdir(parents=True)
            (ahead / "scenario.json").write_text("{}")
            raise KeyboardInterrupt  # the signal lands in this very thread, mid-episode
        return result("reference", GRID[plan.index], "pass", checks())

    stopped, done = _episodes(tmp_path, monkeypatch, 1, play)
    assert {i: r["verdict"] for i, r in done.items()} == {0: "pass", 1: "interrupted"}
    saved = load_json(tmp_path / "out" / "reference" / "tool_failure" / "scenario_result.json", "scenario-result/v1")
    assert saved["episode_id"] == f"hp-{RUN_ID}-1" and saved["verdict"] == "interrupted"
    assert "interrupted by SIGINT" in saved["execution"]["error"]
    assert (stopped.finished, stopped.interrupted, stopped.not_run) == (1, 1, 2)
    summary = load_json(tmp_path / "out" / "summary.json", "probe-summary/v1")
    assert [e["scenario"] for e in summary["interrupted"]["not_run"]] == ["model_error", "retry_429"]
    # What never began leaves no folder that would pass for half an episode (an audit would name it as one).
    assert sorted(p.name for p in (tmp_path / "out" / "reference").iterdir()) == ["tool_failure"]


def test_the_pool_says_a_stop_is_a_stop_before_its_clean_up_kills_what_runs() -> None:
    from orchestrator.parallel import run_pool

    seen: list[str] = []
    started = threading.Barrier(2)

    def work(item: int, _free: Any) -> dict[str, Any]:
        if item == 0:
            started.wait(timeout=30)
            _thread.interrupt_main()
        else:
            started.wait(timeout=30)
        return {}

    with pytest.raises(KeyboardInterrupt):
        run_pool([0, 1], work, 2, cleanup=lambda: seen.append("cleanup"), on_stop=lambda: seen.append("stop"))
    assert seen[0] == "stop" and "cleanup" in seen


def _interrupted_run(tmp_path: Path, *, witness: bool) -> Path:
    """A saved run stopped after tool_success finished and while retry_429 ran; tool_failure never started."""
    judged = tmp_path / "judged"
    bare = tmp_path / "bare"
    for name in ("tool_success", "retry_429"):
        shutil.copytree(FIXTURES / name, bare / "reference" / name)
    audit(bare, judged)  # real results of the real captured episodes
    run = tmp_path / "run"
    shutil.copytree(judged, run, ignore=shutil.ignore_patterns("summary.json", "report.*", "junit.xml", "audit.json"))
    plan = json.loads((run / "suite.json").read_text())
    plan["scenarios"].append({"name": "tool_failure", "sha256": "c" * 64})
    (run / "suite.json").write_text(json.dumps(plan))
    cut = run / "reference" / "retry_429"
    saved = json.loads((cut / "scenario_result.json").read_text())
    saved["execution"].update(exit_code=137)
    (cut / "scenario_result.json").write_text(json.dumps(interrupted_result(saved, "SIGTERM")))
    if not witness:  # stopped before its witness and rollout were copied out of the pod
        (cut / "witness.jsonl").unlink()
        (cut / "rollout.json").unlink()
    results = [load_json(run / "reference" / s / "scenario_result.json", "scenario-result/v1") for s in
               ("retry_429", "tool_success")]  # fmt: skip
    report_run(run, plan, results, full_suite=False, started_at=T0, finished_at=T1,
               interrupted=Interruption("SIGTERM"))  # fmt: skip
    return run


@pytest.mark.parametrize("witness", [True, False], ids=["with-witness", "cut-before-its-witness"])
def test_an_audit_keeps_an_interrupted_episode_interrupted(tmp_path: Path, witness: bool) -> None:
    run = _interrupted_run(tmp_path, witness=witness)
    res = audit(run, tmp_path / "audited")
    verdicts = {r["scenario"]: r["verdict"] for r in res.results}
    # Re-judged, the killed episode's evidence would fail it (a witnessed attempt with no record, no final answer).
    assert verdicts == {"retry_429": "interrupted", "tool_success": "pass"}
    assert res.exit_code == 130
    again = load_json(tmp_path / "audited" / "reference" / "retry_429" / "scenario_result.json", "scenario-result/v1")
    assert again["checks"] == [] and again["execution"]["exit_code"] == 137
    summary = load_json(tmp_path / "audited" / "summary.json", "probe-summary/v1")
    assert summary["verdict"] == "interrupted" and summary["errors"] == [] and summary["missing"] == []
    assert summary["interrupted"] == {
        "signal": "SIGTERM",
        "finished": 1,
        "interrupted": 1,
        "not_run": [{"harness": "reference", "scenario": "tool_failure"}],
    }
    original = json.loads((run / "summary.json").read_text())
    assert original["interrupted"] == summary["interrupted"]


def _shard(root: Path, index: int, cells: list[tuple[str, str, str]], interrupted: bool) -> Path:
    run_id = f"20250101T12000{index}-shard{index}"
    plan = make_suite(["reference"], ["retry_429", "tool_failure", "tool_success"], run_id=run_id)
    plan.update(
        shard={"index": index, "count": 2}, episodes=[{"harness": "reference", "scenario": s} for s, _, _ in cells]
    )
    results = []
    for scenario, verdict, _ in cells:
        r = result("reference", scenario, "pass", checks(), run_id=run_id)
        results.append(interrupted_result(r, "SIGINT") if verdict == "interrupted" else r)
    done = [r for r, (_, _, ran) in zip(results, cells, strict=True) if ran == "ran"]
    run = write_run(root / f"shard{index}", plan, done)
    stopped = Interruption("SIGINT") if interrupted else None
    summary = build_summary(run.dir, plan, done, True, T0, T1, stopped)
    (run.dir / "summary.json").write_bytes(summary_bytes(summary))
    return run.dir


def test_a_merge_of_an_interrupted_shard_is_an_interrupted_run(tmp_path: Path) -> None:
    one = _shard(tmp_path, 1, [("retry_429", "pass", "ran"), ("tool_success", "pass", "ran")], False)
    two = _shard(tmp_path, 2, [("tool_failure", "interrupted", "ran")], True)
    res = merge_runs([one, two], tmp_path / "merged")
    assert res.exit_code == 130
    summary = load_json(tmp_path / "merged" / "summary.json", "probe-summary/v1")
    assert summary["verdict"] == "interrupted"
    assert summary["interrupted"] == {"signal": "SIGINT", "finished": 2, "interrupted": 1, "not_run": []}
    merged = {e["scenario"]: e["verdict"] for e in summary["harnesses"][0]["scenarios"]}
    assert merged == {"retry_429": "pass", "tool_failure": "interrupted", "tool_success": "pass"}


def test_a_merge_of_a_shard_stopped_before_its_episode_lists_it_as_not_run(tmp_path: Path) -> None:
    one = _shard(tmp_path, 1, [("retry_429", "pass", "ran"), ("tool_success", "pass", "ran")], False)
    two = _shard(tmp_path, 2, [("tool_failure", "pass", "never")], True)
    res = merge_runs([one, two], tmp_path / "merged")
    assert res.exit_code == 130
    summary = load_json(tmp_path / "merged" / "summary.json", "probe-summary/v1")
    assert summary["missing"] == [] and summary["errors"] == []
    assert summary["interrupted"]["not_run"] == [{"harness": "reference", "scenario": "tool_failure"}]
