"""Scenario files: the shipped ones validate; broken ones are rejected with JSONPath-named faults."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from orchestrator.evidence import FormatError
from orchestrator.scenarios import SCENARIOS_DIR, list_scenarios, load_scenario


def _write(tmp_path: Path, data: dict[str, object], name: str = "tool_success") -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _shipped() -> dict[str, object]:
    data: dict[str, object] = yaml.safe_load((SCENARIOS_DIR / "tool_success.yaml").read_text())
    return data


def test_every_shipped_scenario_validates() -> None:
    names = [s.name for s in list_scenarios()]
    assert names == [
        "body_not_json",
        "context_compaction",
        "harness_deadline",
        "length_cut",
        "model_error",
        "overloaded_529",
        "parallel_tools",
        "quota_window",
        "retry_429",
        "retry_500",
        "retry_after",
        "server_timeout",
        "sse_malformed",
        "stream_cut",
        "stream_error_event",
        "tool_args_truncated",
        "tool_failure",
        "tool_success",
        "usage_omitted",
        "wrong_answer",
    ]
    s = load_scenario("tool_success")
    assert len(s.tool_steps()) == 2
    assert s.final_answer() == "PROBE_DONE"
    assert s.scope == {"tools": True, "steps": True, "final_answer": True, "errors_expected": False}
    assert s.harness_deadline is None
    # Scenarios whose point is a bound declare it: the episode ends there, not at the run's --timeout.
    assert load_scenario("harness_deadline").harness_deadline == 120
    assert load_scenario("context_compaction").data["context_window"] == 200_000


def test_task_holds_no_expectation() -> None:
    for s in list_scenarios():
        assert s.final_answer() is None or s.final_answer() not in s.task


def test_provider_json_has_defaults_filled() -> None:
    data = json.loads(load_scenario("tool_success").provider_json())
    assert data["faults"] == [] and data["overrides"] == {}
    assert all(c["exit_code"] == 0 for step in data["script"] for c in step.get("tool_calls", []))


@pytest.mark.parametrize(
    ("mutate", "path", "words"),
    [
        (lambda d: d.pop("task"), "$", "'task' is a required property"),
        (
            lambda d: d["script"].append({"tool_calls": [{"exit_code": 300}]}),
            "$.script[3].tool_calls[0].exit_code",
            "300",
        ),
        (lambda d: d["scope"].update(tools="yes"), "$.scope.tools", "not of type 'boolean'"),
        (lambda d: d.update(extra=1), "$", "Additional properties"),
        (lambda d: d["script"].insert(0, {"final_answer": "X"}), "$.script[0]", "must be the last step"),
        (lambda d: d.update(name="other"), "$.name", "must equal the file name"),
        (lambda d: d.update(faults=[{"attempt": 0, "kind": "http_error"}]), "$.faults[0]", "'status' is a required"),
        (
            lambda d: d.update(faults=[{"attempt": 0, "kind": "cut", "status": 500}]),
            "$.faults[0].status",
            "not be valid",
        ),
        (
            lambda d: d.update(faults=[{"attempt": 0, "kind": "reset", "max_seconds": 1}]),
            "$.faults[0].max_seconds",
            "not be valid",
        ),
        (lambda d: d.update(faults=[{"attempt": 0, "kind": "stall"}]), "$.faults[0].kind", "is not one of"),
    ],
)
def test_broken_scenario_is_rejected_with_its_path(tmp_path: Path, mutate, path: str, words: str) -> None:  # type: ignore[no-untyped-def]
    data = _shipped()
    mutate(data)
    with pytest.raises(FormatError) as err:
        load_scenario(_write(tmp_path, data))
    assert any(f.path == path and words in f.message for f in err.value.faults), err.value.faults
    assert path in str(err.value)


def test_not_yaml_and_unknown_name(tmp_path: Path) -> None:
    bad = tmp_path / "x.yaml"
    bad.write_text("a: [unclosed")
    with pytest.raises(FormatError, match="not YAML"):
        load_scenario(bad)
    with pytest.raises(FormatError, match="no such scenario"):
        load_scenario("does_not_exist")


def test_fault_scenarios_declare_errors_and_their_expected_outcome() -> None:
    # A reply cut at the token limit, or whose tool arguments are cut, is a reply: no attempt fails there.
    replies = {"length_cut", "args_truncated"}
    for s in list_scenarios():
        faults = s.data["faults"]
        assert s.scope["errors_expected"] == any(f["kind"] not in replies for f in faults), s.name
        if any(f.get("repeat") for f in faults):
            assert s.expected["outcome"] == "error", s.name
        elif s.expected["outcome"] == "either":
            # A harness may end on the fault: then no final answer is required of it, and no tool call is due after.
            assert not s.scope["final_answer"], s.name
            assert all(f["attempt"] == len(s.tool_steps()) for f in faults), s.name
        else:
            assert s.expected["outcome"] == "completed", s.name
    model_error = load_scenario("model_error")
    assert model_error.scope == {"tools": False, "steps": False, "final_answer": False, "errors_expected": True}
    wrong = load_scenario("wrong_answer")
    assert wrong.final_answer() != wrong.expected["final_answer"]
