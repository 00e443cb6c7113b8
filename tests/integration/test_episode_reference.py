"""A real episode end to end: reference harness + proxy in containers on a private network."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.checks import read_witness
from orchestrator.evidence import load_json
from orchestrator.scenarios import SCENARIOS_DIR
from tests.integration.conftest import Images, hp, labelled

pytestmark = pytest.mark.docker

EPISODE_FILES = [
    "witness.jsonl",
    "rollout.json",
    "native",
    "markers",
    "harness.log",
    "proxy.log",
    "runtime.json",
    "scenario_result.json",
]


def _no_leftovers(run_id: str) -> None:
    for kind in ("ps", "network", "volume"):
        assert labelled(kind, run_id) == [], f"docker {kind} still shows objects of run {run_id}"


def test_tool_success_passes_and_leaves_nothing(images: Images, out_dir: Path) -> None:
    res = hp("run", "--harness", "reference", "--scenario", "tool_success", "--output", str(out_dir))
    assert res.code == 0, res.stdout + res.stderr
    assert str(out_dir.resolve()) in res.stdout

    suite = load_json(out_dir / "suite.json", "suite/v1")
    assert suite["images"]["reference"]["image_id"] == images.reference.image_id
    assert any(k.startswith("proxy_addons/") for k in suite["inputs"])
    ep = out_dir / "reference" / "tool_success"
    for name in EPISODE_FILES:
        assert (ep / name).exists(), f"{name} missing"

    result = load_json(ep / "scenario_result.json", "scenario-result/v1")
    assert result["verdict"] == "pass"
    assert result["execution"] == {**result["execution"], "status": "exited", "exit_code": 0}
    assert {c["status"] for c in result["checks"]} <= {"pass", "not_applicable"}
    assert sum(c["status"] == "pass" for c in result["checks"]) >= 30

    runtime = load_json(ep / "runtime.json", "runtime/v1")
    assert runtime["harness"]["version"] == "probe-reference 0.1.0"
    assert runtime["proxy"]["version"] and "12.3.1" in runtime["proxy"]["version"]

    rollout = load_json(ep / "rollout.json", "probe-rollout/v1")
    witness = read_witness(ep / "witness.jsonl")  # validates every line
    issued = [c["tool_call_id"] for c in witness.tool_calls()]
    assert len(issued) == 2
    assert sorted(t["tool_call_id"] for t in rollout["tool_calls"]) == sorted(issued)
    assert rollout["outcome"]["final_answer"] == "PROBE_DONE"
    assert list(witness.of("end")), "the proxy was not stopped cleanly (no end event)"
    for call in witness.tool_calls():
        assert (ep / "markers" / f"{call['tool_call_id']}.txt").read_text() == call["token"]

    # The harness never saw the expectations: its log and native files do not contain the scenario file.
    native = "".join(p.read_text(errors="replace") for p in (ep / "native").rglob("*") if p.is_file())
    assert "expected" not in json.loads((ep / "rollout.json").read_text())
    assert "errors_expected" not in native
    _no_leftovers(suite["run_id"])


def test_streaming_mode_passes(images: Images, out_dir: Path) -> None:
    res = hp("run", "-H", "reference", "-s", "tool_success", "-a", "stream=true", "-o", str(out_dir))
    assert res.code == 0, res.stdout + res.stderr
    witness = read_witness(out_dir / "reference" / "tool_success" / "witness.jsonl")
    model = witness.attempts()
    assert model and all(a["stream"] for a in model)
    assert all(a["sse_events"] for a in model if a["status"] == 200)


def test_existing_output_directory_is_refused(out_dir: Path) -> None:
    out_dir.mkdir()
    (out_dir / "keep.txt").write_text("precious")
    res = hp("run", "--harness", "reference", "--scenario", "tool_success", "--output", str(out_dir))
    assert res.code == 2
    assert "already exists" in res.stderr
    assert sorted(p.name for p in out_dir.iterdir()) == ["keep.txt"]


def test_hanging_harness_is_stopped_reported_and_cleaned(images: Images, out_dir: Path) -> None:
    res = hp(
        "run",
        "-H",
        "reference",
        "-s",
        "tool_success",
        "-a",
        "mode=hang",
        "--timeout",
        "5",
        "-o",
        str(out_dir),
    )
    assert res.code == 1, res.stdout + res.stderr
    result = load_json(out_dir / "reference" / "tool_success" / "scenario_result.json", "scenario-result/v1")
    assert result["execution"]["status"] == "timeout"
    assert result["execution"]["exit_code"] is None
    assert 5 <= result["execution"]["seconds"] < 60
    assert result["verdict"] == "fail"
    failed = {c["id"] for c in result["checks"] if c["status"] == "fail"}
    assert "witness.final_answer_sent" in failed
    _no_leftovers(load_json(out_dir / "suite.json", "suite/v1")["run_id"])


def test_scenario_deadline_ends_the_episode_before_the_run_timeout(
    images: Images, out_dir: Path, tmp_path: Path
) -> None:
    """A scenario's own `harness_deadline` is the bound: a harness still running then is killed and named."""
    text = (SCENARIOS_DIR / "harness_deadline.yaml").read_text()
    scenario = tmp_path / "harness_deadline.yaml"
    scenario.write_text(text.replace("harness_deadline: 120", "harness_deadline: 5"))
    res = hp("run", "-H", "reference", "-s", str(scenario), "-a", "mode=hang", "--timeout", "300", "-o", str(out_dir))
    assert res.code == 1, res.stdout + res.stderr
    result = load_json(out_dir / "reference" / "harness_deadline" / "scenario_result.json", "scenario-result/v1")
    execution = result["execution"]
    assert execution["status"] == "deadline"
    assert execution["deadline_seconds"] == 5
    assert execution["timeout_seconds"] == 300
    assert 5 <= execution["seconds"] < 60
    # The logs collected by then are still checked.
    assert result["verdict"] == "fail"
    assert {c["id"]: c["status"] for c in result["checks"]}["witness.final_answer_sent"] == "fail"
    _no_leftovers(load_json(out_dir / "suite.json", "suite/v1")["run_id"])


def test_unknown_harness_and_scenario_are_input_errors(out_dir: Path) -> None:
    res = hp("run", "-H", "nosuch", "-o", str(out_dir))
    assert res.code == 2 and "unknown harness" in res.stderr
    res = hp("run", "-H", "reference", "-s", "nosuch", "-o", str(out_dir))
    assert res.code == 2 and "no such scenario" in res.stderr
    assert not out_dir.exists()
