"""Scenario interpretation inside the proxy: defaults, faults lookup, rejection of unplayable files."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REPO, TOOL_SUCCESS_YAML, tool_success_scenario

from proxy_addons.scenario import (
    DEFAULT_CUT_PAUSE_SECONDS,
    DEFAULT_WITHHOLD_MAX_SECONDS,
    Fault,
    FinalAnswerStep,
    ScenarioError,
    ToolCallsStep,
    load_scenario,
    parse_scenario,
)


def minimal(**extra: Any) -> dict[str, Any]:
    return {"schema": "probe-scenario/v1", "name": "s", "script": [{"final_answer": "X"}], **extra}


def test_tool_success_yaml_loads_with_its_sha256(tmp_path: Path) -> None:
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(yaml.safe_load(TOOL_SUCCESS_YAML.read_text())))
    scenario = load_scenario(path)
    assert scenario.name == "tool_success"
    assert scenario.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert [type(step) for step in scenario.steps] == [ToolCallsStep, ToolCallsStep, FinalAnswerStep]
    assert scenario.steps[2] == FinalAnswerStep("PROBE_DONE")
    assert isinstance(scenario.steps[0], ToolCallsStep) and scenario.steps[0].calls[0].exit_code == 0
    assert (scenario.model, scenario.usage, scenario.faults) == ("probe-model", True, ())


def test_defaults_are_applied_when_optional_fields_are_absent() -> None:
    scenario = parse_scenario(
        minimal(
            script=[{"tool_calls": [{}]}, {"final_answer": "X"}],
            faults=[{"attempt": 0, "kind": "http_error", "status": 500}],
        )
    )
    assert scenario.model == "probe-model"
    assert scenario.usage is True
    step = scenario.steps[0]
    assert isinstance(step, ToolCallsStep) and step.calls[0].exit_code == 0
    fault = scenario.faults[0]
    assert (fault.repeat, fault.error_type, fault.message, fault.retry_after) == (
        False,
        "probe_error",
        "scripted model failure",
        None,
    )


def test_fault_lookup_exact_then_repeat() -> None:
    scenario = parse_scenario(
        minimal(
            faults=[
                {"attempt": 1, "kind": "http_error", "status": 500, "repeat": True},
                {"attempt": 3, "kind": "http_error", "status": 429},
            ]
        )
    )
    assert scenario.fault_for(0) is None
    assert [scenario.fault_for(n).status for n in (1, 2, 3, 4)] == [500, 500, 429, 500]  # type: ignore[union-attr]


def test_full_orchestrator_document_is_accepted() -> None:
    assert parse_scenario(tool_success_scenario()).name == "tool_success"


@pytest.mark.parametrize(
    "document",
    [
        [],
        minimal(schema="probe-scenario/v0"),
        minimal(script=[]),
        minimal(script=[{"final_answer": "X"}, {"tool_calls": [{}]}]),
        minimal(script=[{"tool_calls": [{"exit_code": 256}]}]),
        minimal(script=[{"tool_calls": [{"exit_code": True}]}]),
        minimal(script=[{"tool_calls": [], "final_answer": "x"}]),
        minimal(faults=[{"attempt": 0, "kind": "http_error"}]),
        minimal(faults=[{"attempt": 0, "kind": "cut_stream", "status": 500}]),
        minimal(faults=[{"attempt": 0, "kind": "cut", "status": 500}]),
        minimal(faults=[{"attempt": 0, "kind": "reset", "max_seconds": 1}]),
        minimal(faults=[{"attempt": 0, "kind": "withhold", "max_seconds": -1}]),
        minimal(faults=[{"attempt": 0, "kind": "cut", "after_events": 1.5}]),
        minimal(faults=[{"attempt": 0, "kind": "http_error", "status": 504, "delay_seconds": "2"}]),
        minimal(faults=[{"attempt": 0, "kind": "http_error", "status": 500}] * 2),
        minimal(faults=[{"attempt": 0, "kind": "overloaded", "status": 529}]),
        minimal(faults=[{"attempt": 0, "kind": "length_cut", "after_events": 2}]),
        minimal(faults=[{"attempt": 0, "kind": "quota", "requests": 2}]),
        minimal(faults=[{"attempt": 0, "kind": "quota", "requests": 0, "window_seconds": 5}]),
        minimal(faults=[{"attempt": 0, "kind": "quota", "requests": 2, "window_seconds": 5, "repeat": True}]),
        minimal(
            faults=[
                {"attempt": 0, "kind": "quota", "requests": 2, "window_seconds": 5},
                {"attempt": 1, "kind": "quota", "requests": 1, "window_seconds": 5},
            ]
        ),
        minimal(faults=[{"attempt": 0, "kind": "http_error", "status": 429, "retry_after_ms": -1}]),
        minimal(faults=[{"attempt": 0, "kind": "not_json", "retry_after": 3}]),
        minimal(usage="yes"),
    ],
)
def test_unplayable_documents_are_rejected(document: Any) -> None:
    with pytest.raises(ScenarioError):
        parse_scenario(document)


def test_missing_and_non_json_files_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError):
        load_scenario(tmp_path / "absent.json")
    bad = tmp_path / "bad.json"
    bad.write_text("schema: probe-scenario/v1\n")
    with pytest.raises(ScenarioError):
        load_scenario(bad)


def test_timed_fault_kinds_and_their_defaults() -> None:
    scenario = parse_scenario(
        minimal(
            faults=[
                {"attempt": 0, "kind": "http_error", "status": 504, "delay_seconds": 2, "error_type": "model_timeout"},
                {"attempt": 1, "kind": "withhold"},
                {"attempt": 2, "kind": "cut"},
                {"attempt": 3, "kind": "cut", "after_events": 0, "pause_seconds": 0},
                {"attempt": 4, "kind": "reset", "repeat": True},
                {"attempt": 5, "kind": "withhold", "max_seconds": 1.5},
            ]
        )
    )
    assert scenario.faults == (
        Fault(attempt=0, kind="http_error", status=504, error_type="model_timeout", delay_seconds=2.0),
        Fault(attempt=1, kind="withhold", max_seconds=DEFAULT_WITHHOLD_MAX_SECONDS),
        Fault(attempt=2, kind="cut", after_events=None, pause_seconds=DEFAULT_CUT_PAUSE_SECONDS),
        Fault(attempt=3, kind="cut", after_events=0, pause_seconds=0.0),
        Fault(attempt=4, kind="reset", repeat=True),
        Fault(attempt=5, kind="withhold", max_seconds=1.5),
    )


@pytest.mark.parametrize("path", sorted((REPO / "scenarios").glob("*.yaml")), ids=lambda p: p.stem)
def test_every_shipped_scenario_is_playable(path: Path) -> None:
    document = yaml.safe_load(path.read_text())
    scenario = parse_scenario(document)
    assert scenario.name == path.stem
    assert all(f.kind != "http_error" or f.status is not None for f in scenario.faults)


def test_catalogue_ii_fault_kinds_and_the_quota_that_is_no_attempts_fault() -> None:
    scenario = parse_scenario(
        minimal(
            faults=[
                {"attempt": 0, "kind": "http_error", "status": 429, "retry_after": 3, "retry_after_ms": 3000},
                {"attempt": 1, "kind": "overloaded", "repeat": True},
                {"attempt": 2, "kind": "quota", "requests": 2, "window_seconds": 20},
                {"attempt": 3, "kind": "length_cut"},
                {"attempt": 4, "kind": "args_truncated"},
                {"attempt": 5, "kind": "sse_malformed"},
                {"attempt": 6, "kind": "error_event"},
                {"attempt": 7, "kind": "not_json"},
            ]
        )
    )
    assert scenario.faults[0] == Fault(attempt=0, kind="http_error", status=429, retry_after=3.0, retry_after_ms=3000.0)
    assert scenario.quota == Fault(attempt=2, kind="quota", requests=2, window_seconds=20.0)
    # A quota is a window, not an attempt's fault: attempt 2 falls to the repeating overload before it.
    assert [scenario.fault_for(n).kind for n in range(1, 8)] == [  # type: ignore[union-attr]
        "overloaded",
        "overloaded",
        "length_cut",
        "args_truncated",
        "sse_malformed",
        "error_event",
        "not_json",
    ]
