"""mini-SWE-agent's normalizer on trajectories captured from real runs, and on truncated or corrupt ones."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from orchestrator.evidence import faults
from orchestrator.harnesses import NormalizeError
from orchestrator.harnesses.mini_swe_agent import MiniSweAgentHarness
from orchestrator.harnesses.mini_swe_agent_normalize import TRAJECTORY_NAME, normalize_trajectory
from tests.unit.harnesses import captured

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "native" / "mini-swe-agent"
# Trajectories alone; the `witnessed_*` folders are whole episodes (native/, witness, markers), read below.
SCENARIOS = sorted(p.name for p in FIXTURES.iterdir() if (p / TRAJECTORY_NAME).is_file())
WITNESSED = sorted(p.name for p in FIXTURES.iterdir() if p.name.startswith("witnessed_"))
PREFIX = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


def rollout(scenario: str) -> dict[str, Any]:
    return normalize_trajectory(FIXTURES / scenario / TRAJECTORY_NAME, "mini-swe-agent")


def raw(scenario: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / scenario / TRAJECTORY_NAME).read_text())
    return data


def gap_codes(r: dict[str, Any]) -> set[str]:
    return {g["code"] for g in r["gaps"]}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_captured_trajectory_normalizes_to_a_valid_rollout(scenario: str) -> None:
    r = rollout(scenario)
    assert faults(r, "probe-rollout/v1") == []
    assert r["harness"] == {"name": "mini-swe-agent", "version": "2.4.6"}
    assert len(r["invocations"]) == 1
    assert r["invocations"][0]["model_call_refs"] == [c["model_call_id"] for c in r["model_calls"]]
    # Structural: mini's format has no place for failed attempts, whatever happened in the run.
    gap = next(g for g in r["gaps"] if g["code"] == "model_calls.failed_attempts_unrecorded")
    assert gap["labels"] == ["E1", "E7"]


def test_tool_success_calls_steps_tools_and_submission() -> None:
    r, data = rollout("tool_success"), raw("tool_success")
    replies = [m["extra"]["response"] for m in data["messages"] if m["role"] == "assistant"]
    assert [c["response_id"] for c in r["model_calls"]] == [x["id"] for x in replies]
    first = r["model_calls"][0]
    assert (first["protocol"], first["status_code"], first["finish_reason"], first["error_category"]) == (
        "chat",
        200,
        "tool_calls",
        None,
    )
    assert first["token_stats"] == {"prompt": 100, "completion": 7, "reasoning": 2, "total": 107, "cached": 3}
    # mini records no request start: unknown, and named.
    assert {c["started_at"] for c in r["model_calls"]} == {None}
    assert all(c["completed_at"] for c in r["model_calls"])
    assert "model_calls.started_at_unrecorded" in gap_codes(r)
    assert [(s["step_no"], s["model_call_refs"]) for s in r["steps"]] == [(n, [f"call-{n}"]) for n in (1, 2, 3)]

    tools = r["tool_calls"]
    assert [(t["status"], t["exit_code"], t["step_no"]) for t in tools[:2]] == [
        ("succeeded", 0, 1),
        ("succeeded", 0, 2),
    ]
    results = [m for m in data["messages"] if m["role"] == "tool"]
    assert [t["output"] for t in tools] == [m["content"] for m in results]
    assert tools[0]["arguments"]["command"].startswith("mkdir -p /probe/markers")
    # The command mini ended on: it ran (it printed the submission) but mini records it as not executed.
    submit = tools[2]
    assert PREFIX in submit["arguments"]["command"]
    assert (submit["status"], submit["exit_code"]) == ("failed", -1)
    assert "action was not executed" in submit["output"]
    assert r["outcome"] == {
        "final_answer": "PROBE_DONE",
        "status": "completed",
        "failure_kind": None,
        "failure_reason": None,
    }
    roles = [m["role"] for m in r["invocations"][0]["conversation"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant", "tool"]


def test_tool_failure_keeps_the_exit_code() -> None:
    first = rollout("tool_failure")["tool_calls"][0]
    assert (first["status"], first["exit_code"]) == ("failed", 7)
    assert '"returncode": 7' in first["output"]


def test_parallel_calls_belong_to_one_step() -> None:
    r = rollout("parallel_tools")
    assert [t["step_no"] for t in r["tool_calls"]] == [1, 1, 2]
    assert len({t["tool_call_id"] for t in r["tool_calls"]}) == 3


def test_terminal_model_error_is_an_error_outcome_with_no_calls() -> None:
    r = rollout("model_error")
    assert r["model_calls"] == [] and r["steps"] == [] and r["tool_calls"] == []
    out = r["outcome"]
    assert (out["status"], out["failure_kind"], out["final_answer"]) == ("error", "BadRequestError", None)
    assert "scripted invalid request" in out["failure_reason"]


def test_omitted_usage_is_reported_as_mini_recorded_it() -> None:
    # litellm fills in zero usage when the reply carried none; the normalizer does not second-guess the record.
    stats = {json.dumps(c["token_stats"], sort_keys=True) for c in rollout("usage_omitted")["model_calls"]}
    assert stats == {json.dumps({"cached": None, "completion": 0, "prompt": 0, "reasoning": None, "total": 0})}


def test_a_reply_mini_could_not_parse_is_a_call_kept_in_its_format_error_message() -> None:
    # A plain-text final answer (no profile): mini keeps that reply only inside the user message reporting it.
    r, data = rollout("plain_text_final"), raw("plain_text_final")
    error_message = next(m for m in data["messages"] if m.get("extra", {}).get("interrupt_type") == "FormatError")
    last = r["model_calls"][-1]
    assert (last["response_id"], last["finish_reason"]) == (error_message["extra"]["response"]["id"], "stop")
    assert last["completed_at"] is None and r["steps"][-1]["timestamp"] is None
    assert r["invocations"][0]["conversation"][-1]["role"] == "user"
    assert (r["outcome"]["status"], r["outcome"]["failure_kind"]) == ("error", "APIError")


def test_the_adapter_reads_the_trajectory_from_its_native_folder(tmp_path: Path) -> None:
    folder = tmp_path / "native" / ".mini-swe-agent-probe"
    folder.mkdir(parents=True)
    shutil.copy(FIXTURES / "tool_success" / TRAJECTORY_NAME, folder / TRAJECTORY_NAME)
    assert MiniSweAgentHarness().normalize(tmp_path / "native") == rollout("tool_success")
    with pytest.raises(NormalizeError, match="wrote no trajectory"):
        MiniSweAgentHarness().normalize(tmp_path / "empty")


@pytest.mark.parametrize("fraction", [0.0, 0.001, 0.25, 0.5, 0.9, 0.999])
def test_a_truncated_trajectory_is_a_clear_normalize_error(tmp_path: Path, fraction: float) -> None:
    data = (FIXTURES / "tool_success" / TRAJECTORY_NAME).read_bytes()
    path = tmp_path / TRAJECTORY_NAME
    path.write_bytes(data[: int(len(data) * fraction)])
    with pytest.raises(NormalizeError, match="truncated or corrupt"):
        normalize_trajectory(path, "mini-swe-agent")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\xff\xfe\x00garbage", "truncated or corrupt"),
        (b"[]", "no `messages` list"),
        (b'{"info": {}, "messages": "x"}', "no `messages` list"),
        (b"null", "no `messages` list"),
    ],
)
def test_a_corrupt_trajectory_is_a_clear_normalize_error(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / TRAJECTORY_NAME
    path.write_bytes(content)
    with pytest.raises(NormalizeError, match=message):
        normalize_trajectory(path, "mini-swe-agent")


def _mangled(value: Any, junk: Any) -> Any:
    """Every nested value replaced, one at a time, by junk: yields whole mangled documents."""
    if isinstance(value, dict):
        for key in value:
            yield {**value, key: junk}
            for inner in _mangled(value[key], junk):
                yield {**value, key: inner}
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield [*value[:i], junk, *value[i + 1 :]]
            for inner in _mangled(item, junk):
                yield [*value[:i], inner, *value[i + 1 :]]


@pytest.mark.parametrize("junk", [None, 7, "x", [], {}, True, -1.5])
def test_malformed_fields_never_crash_the_normalizer(tmp_path: Path, junk: Any) -> None:
    # The messages part only: the long config under info is not read beyond mini_version and exit_status.
    data = raw("parallel_tools")
    data["info"] = {k: v for k, v in data["info"].items() if k != "config"}
    data["messages"] = [m for m in data["messages"] if m["role"] != "system"]
    for m in data["messages"]:
        if m["role"] == "user":
            m["content"] = "task"
    path = tmp_path / TRAJECTORY_NAME
    checked = 0
    for document in _mangled(data, junk):
        path.write_text(json.dumps(document))
        try:
            result = normalize_trajectory(path, "mini-swe-agent")
        except NormalizeError:
            continue
        # Whatever it makes of a damaged record is still a rollout the checks can read and judge.
        assert faults(result, "probe-rollout/v1") == [], document
        checked += 1
    assert checked > 100


@pytest.mark.parametrize("name", WITNESSED)
def test_captured_episode_gets_the_verdicts_of_its_real_run(tmp_path: Path, name: str) -> None:
    captured.assert_replays_its_real_run("mini-swe-agent", name, tmp_path / name)


def test_each_recorded_reply_is_the_body_the_proxy_sent_but_usage_litellm_made_up(tmp_path: Path) -> None:
    """mini-SWE-agent keeps each reply as litellm dumps it: the proxy's body, plus fields written out as null or
    empty (absence, not another reply). Where the reply carried no usage, litellm's dump has counts of 0: not the
    reply the proxy sent, which calls.witness_response names."""
    honest = captured.materialize("mini-swe-agent", "witnessed_tool_success", tmp_path / "a")
    assert (
        captured.replay(honest, MiniSweAgentHarness().normalize(honest.native))["calls.witness_response"].reasons == []
    )
    omitted = captured.materialize("mini-swe-agent", "witnessed_usage_omitted", tmp_path / "b")
    result = captured.replay(omitted, MiniSweAgentHarness().normalize(omitted.native))["calls.witness_response"]
    assert str(result.status) == "fail"
    assert result.reasons and all("$.usage: recorded" in r and "the reply sent none" in r for r in result.reasons)
