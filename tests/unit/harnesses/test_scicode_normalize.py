"""SciCode: launch preset, the problem file it is given, the python-block profile, and the normalizer on the files
SciCode writes (a layout like a real run's, and episodes captured from real runs: see the fixtures' README)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.evidence import faults
from orchestrator.harnesses import LaunchContext, NormalizeError, get_harness
from orchestrator.harnesses.scicode import OUTPUT_DIR, PROBLEM_ID
from orchestrator.scenarios import load_scenario
from tests.unit.harnesses.captured import assert_replays_its_real_run, captured, fixtures

_SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios"


def test_launch_points_scicode_at_the_scripted_provider_with_one_sub_step_per_scripted_step() -> None:
    h = get_harness("scicode")
    scenario = load_scenario(_SCENARIOS / "tool_success.yaml")
    launch = h.launch(scenario, LaunchContext())
    argv = launch.command
    assert argv[argv.index("--url") + 1] == "http://provider:8080/v1/chat/completions"
    assert argv[argv.index("--model") + 1] == "probe-model"
    assert argv[argv.index("--output-dir") + 1] == OUTPUT_DIR
    assert launch.environment["API_KEY"] == LaunchContext().api_key
    assert h.native_paths == (OUTPUT_DIR,)
    assert h.harness_profile() == {"delivery": "python_blocks"}
    [(path, content)] = launch.files.items()
    assert argv[argv.index(path) - 1] == "probe-scicode"
    [problem] = [json.loads(line) for line in content.decode().splitlines()]
    steps = problem["sub_steps"]
    assert len(steps) == len(scenario.data["script"]) == 3
    assert all(scenario.task in s["step_description_prompt"] and s["test_cases"] == [] for s in steps)
    assert [s["step_number"] for s in steps] == [f"{PROBLEM_ID}.{i}" for i in (1, 2, 3)]


def _write(root: Path, rel: str, text: str) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text)


def _native(tmp_path: Path, steps: int = 2, ran: tuple[str, ...] = ("pass", "fail")) -> Path:
    out = tmp_path / "native" / "scicode"
    for k in range(1, steps + 1):
        _write(out, f"prompt/probe-model/without_background/probe.{k}.txt", f"PROMPT {k}")
        _write(out, f"generated_code/probe-model/without_background/probe.{k}_0.py", f"\n\nprint({k})\n")
    for k, result in enumerate(ran, start=1):
        _write(out, f"logs/probe-model/without_background/probe.{k}_0.txt", result)
    return tmp_path / "native"


def test_normalizer_reads_prompts_code_and_runs(tmp_path: Path) -> None:
    r = get_harness("scicode").normalize(_native(tmp_path))
    assert [str(f) for f in faults(r, "probe-rollout/v1")] == []
    assert [c["model_call_id"] for c in r["model_calls"]] == ["probe.1", "probe.2"]
    # SciCode keeps no status, time or usage: nothing is invented for them.
    assert all(c["status_code"] is None and c["started_at"] is None for c in r["model_calls"])
    assert [(t["tool_call_id"], t["status"], t["output"]) for t in r["tool_calls"]] == [
        ("probe.1", "succeeded", None),
        ("probe.2", "failed", None),
    ]
    assert r["tool_calls"][0]["arguments"] == {"code": "\n\nprint(1)\n"}
    [inv] = r["invocations"]
    assert inv["conversation"] == [{"role": "user", "content": "PROMPT 2"}]
    assert r["outcome"] == {"final_answer": None, "status": "unknown", "failure_kind": None, "failure_reason": None}
    assert {g["code"] for g in r["gaps"]} >= {"model_calls.status_code_unrecorded", "tool_calls.output_unrecorded"}


def test_a_sub_step_whose_code_never_ran_has_no_tool_call(tmp_path: Path) -> None:
    # A run stopped before its scoring phase: prompts and code, no pass/fail.
    r = get_harness("scicode").normalize(_native(tmp_path, ran=()))
    assert len(r["model_calls"]) == 2 and r["tool_calls"] == []


def test_missing_output_is_a_normalize_error(tmp_path: Path) -> None:
    (tmp_path / "native" / "scicode").mkdir(parents=True)
    with pytest.raises(NormalizeError, match="no prompt/"):
        get_harness("scicode").normalize(tmp_path / "native")


@pytest.mark.parametrize("name", captured("scicode") if fixtures("scicode").is_dir() else [])
def test_a_real_run_replays_its_checks(name: str, tmp_path: Path) -> None:
    assert_replays_its_real_run("scicode", name, tmp_path)
