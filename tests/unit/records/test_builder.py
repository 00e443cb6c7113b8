"""The rollout builder: what it assembles, in which key order, and the gaps it names itself."""

from __future__ import annotations

import json

from orchestrator.evidence import faults
from orchestrator.records import RolloutBuilder, gap, outcome, token_stats, tool_record

STRUCTURAL = [gap("model_calls.started_at_unrecorded", "no start time", ["E1"])]


def _call(b: RolloutBuilder) -> str:
    return b.call(
        {
            "model_call_id": b.next_call_id(),
            "started_at": None,
            "completed_at": None,
            "protocol": "chat",
            "status_code": 200,
            "response_id": "r-1",
            "finish_reason": "stop",
            "error_category": None,
            "token_stats": token_stats(prompt=3),
            "invocation_id": "s",
        }
    )


def test_a_built_rollout_is_schema_valid_with_its_keys_in_the_schema_order() -> None:
    b = RolloutBuilder("h", "1.0", STRUCTURAL)
    cid = _call(b)
    b.step(1, "s", None, [cid])
    b.invocation("s", [{"role": "user", "content": "go"}])
    rollout = b.build(outcome("completed", final_answer="done"), provenance={"retry_placement": "inferred"})
    assert [str(f) for f in faults(rollout, "probe-rollout/v1")] == []
    assert list(rollout) == [
        "schema",
        "harness",
        "task_id",
        "rollout_id",
        "model_calls",
        "invocations",
        "steps",
        "tool_calls",
        "outcome",
        "provenance",
        "gaps",
    ]
    assert rollout["invocations"][0]["model_call_refs"] == ["call-1"]  # refs default to every call recorded
    assert rollout["model_calls"][0]["token_stats"] == {
        "prompt": 3,
        "completion": None,
        "reasoning": None,
        "total": None,
        "cached": None,
    }


def test_optional_top_level_keys_sit_where_every_normalizer_has_them() -> None:
    b = RolloutBuilder("h", None)
    rollout = b.build(
        outcome("unknown"),
        compactions=[{"invocation_id": "s", "step_no": None, "model_call_refs": []}],
        provenance={"retry_placement": "inferred"},
        extensions={"h": {}},
    )
    assert list(rollout)[-4:] == ["compactions", "provenance", "gaps", "extensions"]
    assert "compactions" not in RolloutBuilder("h", None).build(outcome("unknown"))


def test_a_tool_result_that_never_came_is_named() -> None:
    b = RolloutBuilder("h", None)
    requested = {"tool_call_id": "t-1", "tool_name": "bash", "arguments": {}}
    b.tool(tool_record(requested, "s", 1), awaits_result=True)
    b.tool(tool_record({**requested, "tool_call_id": "t-2"}, "s", 1), awaits_result=True)
    record = b.result("t-1")
    assert record is not None and record["tool_call_id"] == "t-1"
    assert b.result("t-1") is None  # taken once
    b.unrecorded_results()
    assert b.gaps == [gap("tool_calls.result_unrecorded", "no tool message records the result of t-2", ["E5"])]


def test_structural_gaps_are_copied_so_a_rollout_never_changes_the_harness_constant() -> None:
    before = json.dumps(STRUCTURAL)
    b = RolloutBuilder("h", None, STRUCTURAL)
    b.gaps[0]["labels"].append("E9")
    b.gap("x", "y")
    assert json.dumps(STRUCTURAL) == before
