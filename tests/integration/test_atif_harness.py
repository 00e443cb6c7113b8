"""`-H atif` end to end: the reference harness writing ATIF (probe_reference/atif_out.py) probed through the
generic ATIF harness, and a command that never writes its trajectory (a named finding, never an error)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.evidence import load_json
from tests.integration.conftest import Images, hp

pytestmark = pytest.mark.docker

TRAJECTORY = "/home/probe/atif/trajectory.json"
REFERENCE_ATIF = (
    "probe-reference --task {task} --task-id {task_id} --model {model} --rollout /home/probe/.ref/rollout.json"
    " && PYTHONPATH=/opt/reference/src /opt/reference/bin/python -m probe_reference.atif_out"
    " /home/probe/.ref/rollout.json {trajectory} {model}"
)


def _statuses(result: dict[str, object]) -> dict[str, str]:
    return {c["id"]: c["status"] for c in result["checks"]}  # type: ignore[attr-defined,index]


def test_reference_writing_atif_is_read_with_the_atif_import(images: Images, tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = hp("run", "-H", "atif", "-a", "image=reference", "-a", f"command={REFERENCE_ATIF}",
             "-a", f"trajectory={TRAJECTORY}", "-a", "version=probe-reference --version",
             "-s", "tool_success", "-o", str(out))  # fmt: skip
    assert res.code == 1, res.stdout + res.stderr  # ATIF cannot hold every P0 fact: a fail, never an error
    ep = out / "atif" / "tool_success"
    result = load_json(ep / "scenario_result.json", "scenario-result/v1")
    assert result["normalize"] == {"status": "ok", "message": None}
    assert (ep / "native" / "trajectory.json").is_file()
    # Not load_json: ATIF has no call protocol, so the rollout read from it is (rightly) not schema-valid.
    rollout = json.loads((ep / "rollout.json").read_text())
    assert rollout["harness"]["name"] == "reference"
    assert "model_calls.failed_attempts_unrecordable" in {g["code"] for g in rollout["gaps"]}
    checks = _statuses(result)
    # What ATIF holds is judged and passes: the answer, the tool results the model saw, the steps.
    judged = ("outcome.final_answer", "history.witness_results", "steps.numbering", "witness.tools_executed")
    # The history ATIF's core holds (the task, each agent message) is held to the bodies on the wire.
    for passed in (*judged, "history.witness_task", "history.witness_text"):
        assert checks[passed] == "pass", passed
    # A step's time is ATIF's, but its calls carry no status or id to pair with an attempt: a named gap, not a pass.
    assert checks["steps.witness_times"] == "not_applicable"
    # What it cannot hold fails with the gap named (tool status), never silently passes.
    assert checks["tools.record"] == "fail" and checks["gaps.none_voiding"] == "fail"
    runtime = load_json(ep / "runtime.json", "runtime/v1")
    assert runtime["harness"]["version"] == "probe-reference 0.1.0"


def test_a_trajectory_never_written_is_a_named_finding(images: Images, tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = hp("run", "-H", "atif", "-a", "image=reference", "-a", "command=true", "-a", f"trajectory={TRAJECTORY}",
             "-s", "tool_success", "-o", str(out))  # fmt: skip
    assert res.code == 1, res.stdout + res.stderr
    assert "Traceback" not in res.stderr
    result = load_json(out / "atif" / "tool_success" / "scenario_result.json", "scenario-result/v1")
    assert result["verdict"] == "fail" and result["execution"]["status"] == "exited"
    assert result["normalize"]["status"] == "error"
    assert f"wrote no ATIF trajectory at {TRAJECTORY}" in result["normalize"]["message"]
