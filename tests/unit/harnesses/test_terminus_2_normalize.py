"""Terminus 2: launch preset, keystroke profile, and the normalizer on logs Terminus wrote (a host run, and episodes
captured in its pod: see the fixtures' READMEs)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from orchestrator.evidence import faults
from orchestrator.harnesses import LaunchContext, NormalizeError, get_harness
from orchestrator.scenarios import load_scenario
from tests.unit.harnesses.captured import assert_replays_its_real_run, captured, materialize, witness

_LOGS = Path(__file__).resolve().parents[2] / "fixtures" / "atif" / "terminus-cli-2.0.4"
_SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios"


def _native(tmp_path: Path) -> Path:
    shutil.copytree(_LOGS, tmp_path / "native" / "agent")
    return tmp_path / "native"


def test_launch_points_litellm_at_the_scripted_provider_and_keeps_costs_local() -> None:
    h = get_harness("terminus-2")
    launch = h.launch(load_scenario(_SCENARIOS / "tool_success.yaml"), LaunchContext())
    argv = launch.command
    assert argv[:4] == ["sh", "-c", 'exec "$@" </dev/null', "terminus"]
    assert argv[argv.index("--api-base") + 1] == "http://provider:8080/v1"
    assert argv[argv.index("-m") + 1] == "openai/probe-model"
    assert argv[argv.index("-l") + 1] == "/logs/agent"
    assert launch.environment["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    assert h.native_paths == ("/logs/agent",)
    assert h.harness_profile() == {"delivery": "keystrokes"}


def test_request_timeout_is_litellms_own_setting_and_unset_by_default() -> None:
    scenario = load_scenario(_SCENARIOS / "harness_deadline.yaml")
    assert "REQUEST_TIMEOUT" not in get_harness("terminus-2").launch(scenario, LaunchContext()).environment
    launch = get_harness("terminus-2", {"request_timeout": "20"}).launch(scenario, LaunchContext())
    assert launch.environment["REQUEST_TIMEOUT"] == "20"
    for bad in ("0", "-5", "1.5", "soon"):
        with pytest.raises(ValueError, match="request_timeout"):
            get_harness("terminus-2", {"request_timeout": bad})


def test_normalizer_reads_trajectory_and_debug_logs(tmp_path: Path) -> None:
    r = get_harness("terminus-2").normalize(_native(tmp_path))
    assert [str(f) for f in faults(r, "probe-rollout/v1")] == []
    assert r["harness"] == {"name": "terminus-2", "version": "2.0.4"}
    assert [c["response_id"] for c in r["model_calls"]] == ["chatcmpl-0", "chatcmpl-1", "chatcmpl-2"]
    assert [c["token_stats"]["total"] for c in r["model_calls"]] == [110, 112, 114]
    assert all(c["started_at"] <= c["completed_at"] for c in r["model_calls"])
    # The task_complete pseudo calls are the ending, not commands; the one command keeps its screen.
    [tool] = r["tool_calls"]
    assert tool["tool_name"] == "bash_command" and "tok123" in tool["output"]
    assert r["outcome"] == {
        "final_answer": "Confirmed.",
        "status": "completed",
        "failure_kind": None,
        "failure_reason": None,
    }
    roles = [m["role"] for m in r["invocations"][0]["conversation"]]
    assert roles == ["user", "assistant", "user", "assistant", "user", "assistant"]


def test_missing_or_broken_trajectory_is_a_normalize_error(tmp_path: Path) -> None:
    native = _native(tmp_path)
    (native / "agent" / "trajectory.json").write_text("{")
    with pytest.raises(NormalizeError, match="not ATIF"):
        get_harness("terminus-2").normalize(native)
    (native / "agent" / "trajectory.json").unlink()
    with pytest.raises(NormalizeError, match=r"no trajectory\.json"):
        get_harness("terminus-2").normalize(native)


@pytest.mark.parametrize("name", captured("terminus-2"))
def test_a_real_run_in_its_pod_replays_its_checks(name: str, tmp_path: Path) -> None:
    # retry_429: Terminus keeps neither 429 attempt (debug.json is overwritten, ATIF has no place): a finding.
    assert_replays_its_real_run("terminus-2", name, tmp_path)


def test_a_call_that_never_succeeded_leaves_its_prompt_and_nothing_else(tmp_path: Path) -> None:
    """model_error: every attempt got a 400, so no debug.json and no agent step; the prompt Terminus wrote before
    calling is the history it recorded, and no model call or outcome is invented."""
    paths = materialize("terminus-2", "model_error", tmp_path)
    r = get_harness("terminus-2").normalize(paths.native)
    assert r["model_calls"] == [] and r["steps"] == [] and r["tool_calls"] == []
    [prompt] = r["invocations"][0]["conversation"]
    assert prompt["role"] == "user" and "Run the shell commands you are asked to run" in prompt["content"]
    assert r["outcome"]["status"] == "unknown"


def test_a_pod_run_records_every_typed_command_and_the_confirmed_answer(tmp_path: Path) -> None:
    paths = materialize("terminus-2", "tool_success", tmp_path)
    r = get_harness("terminus-2").normalize(paths.native)
    issued = [e for e in witness(paths) if e["event"] == "tool_call"]
    assert [t["arguments"]["keystrokes"] for t in r["tool_calls"]] == [e["arguments"]["keystrokes"] for e in issued]
    # Each command's shared observation is the screen that showed its token.
    assert all(e["token"] in t["output"] for t, e in zip(r["tool_calls"], issued, strict=True))
    assert r["outcome"]["status"] == "completed" and r["outcome"]["final_answer"] == "PROBE_DONE"
    assert len(r["model_calls"]) == 4  # two commands, task_complete, its confirmation


def _with_steps(tmp_path: Path, edit: Callable[[list[dict[str, Any]]], None]) -> dict[str, Any]:
    """The tool_success capture, its trajectory's agent steps edited."""
    paths = materialize("terminus-2", "tool_success", tmp_path)
    path = paths.native / "agent" / "trajectory.json"
    doc = json.loads(path.read_text())
    agent = [s for s in doc["steps"] if s["source"] == "agent"]
    edit(agent)
    doc["steps"] = [s for s in doc["steps"] if s["source"] != "agent"] + agent
    for i, s in enumerate(doc["steps"]):
        s["step_id"] = i + 1
    path.write_text(json.dumps(doc))
    return get_harness("terminus-2").normalize(paths.native)


def _unparsed_reply(agent: list[dict[str, Any]]) -> None:
    # What Terminus records for a reply it could not parse: the raw text, and its feedback as the observation.
    bad = {k: v for k, v in agent[-1].items() if k not in ("tool_calls", "observation", "message")}
    bad["message"] = "not json"
    bad["observation"] = {"results": [{"content": "ERROR: ERROR: No valid JSON found in response"}]}
    agent.insert(len(agent) - 1, bad)


def test_an_unparsed_reply_between_the_two_task_completes_keeps_the_confirmation(tmp_path: Path) -> None:
    r = _with_steps(tmp_path, _unparsed_reply)
    assert r["outcome"]["status"] == "completed" and r["outcome"]["final_answer"] == "PROBE_DONE"


def test_a_single_task_complete_is_no_ending(tmp_path: Path) -> None:
    r = _with_steps(tmp_path, lambda agent: agent.pop())
    assert r["outcome"]["status"] == "unknown" and r["outcome"]["final_answer"] is None
