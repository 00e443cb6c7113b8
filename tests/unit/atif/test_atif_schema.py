"""Our ATIF JSON Schema and the rules Harbor's models check in code: what is accepted, what is refused and where."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from orchestrator.atif import atif_faults, atif_to_rollout

_DOC: dict[str, Any] = {
    "schema_version": "ATIF-v1.7",
    "session_id": "s-1",
    "agent": {"name": "terminus-cli", "version": "2.0.4", "model_name": "openai/probe-model"},
    "steps": [
        {"step_id": 1, "timestamp": "2026-12-01T11:00:00.000001+00:00", "source": "system", "message": "Task: echo"},
        {
            "step_id": 2,
            "timestamp": "2026-12-01T11:00:01+00:00",
            "source": "agent",
            "model_name": "openai/probe-model",
            "message": "Analysis: a\nPlan: b",
            "tool_calls": [
                {
                    "tool_call_id": "call_0_1",
                    "function_name": "bash_command",
                    "arguments": {"keystrokes": "echo hi\n", "duration": 0.1},
                }
            ],
            "observation": {"results": [{"content": "$ echo hi\nhi\n$"}]},
            "metrics": {"prompt_tokens": 10, "completion_tokens": 3},
        },
        {"step_id": 3, "source": "agent", "message": "done", "metrics": {"prompt_tokens": 20, "completion_tokens": 1}},
    ],
    "final_metrics": {"total_prompt_tokens": 30, "total_completion_tokens": 4, "total_cached_tokens": 0},
}


def _with(change: Any) -> dict[str, Any]:
    doc = copy.deepcopy(_DOC)
    change(doc)
    return doc


def test_a_terminus_shaped_trajectory_is_valid_and_reads_as_one_shared_observation() -> None:
    assert atif_faults(_DOC) == []
    r = atif_to_rollout(_DOC)
    assert r["harness"] == {"name": "terminus-cli", "version": "2.0.4"}
    assert [s["step_no"] for s in r["steps"]] == [1, 2]
    assert r["model_calls"][0]["token_stats"] == {
        "prompt": 10,
        "completion": 3,
        "reasoning": None,
        "total": 13,
        "cached": None,
    }
    # No source_call_id: the screen answers no one command, so no output is attributed; the model saw it as input.
    assert r["tool_calls"][0]["output"] is None
    assert r["invocations"][0]["conversation"][2] == {"role": "user", "content": "$ echo hi\nhi\n$"}
    assert r["outcome"]["final_answer"] == "done"


def _audio(doc: dict[str, Any]) -> None:
    doc["schema_version"] = "ATIF-v1.8"
    doc["steps"][0]["message"] = [
        {"type": "text", "text": "hear this"},
        {"type": "audio", "source": {"media_type": "audio/wav", "path": "a.wav", "duration_sec": 1.5}},
    ]


def test_v18_audio_content_is_accepted_and_its_text_parts_read() -> None:
    doc = _with(_audio)
    assert atif_faults(doc) == []
    assert atif_to_rollout(doc)["invocations"][0]["conversation"][0]["content"] == "hear this"


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (lambda d: d["steps"][1].update(step_id=3), "$.steps[1].step_id"),
        (
            lambda d: d["steps"][1]["observation"]["results"][0].update(source_call_id="call_9"),
            "$.steps[1].observation.results[0].source_call_id",
        ),
        (lambda d: d["steps"][0].update(metrics={"prompt_tokens": 1}), "$.steps[0].metrics"),
        (lambda d: d["steps"][2].update(llm_call_count=0), "$.steps[2].metrics"),
        (lambda d: d.update(schema_version="ATIF-v2.0"), "$.schema_version"),
        (lambda d: d.update(unknown=1), "$"),
        (lambda d: d["agent"].pop("version"), "$.agent"),
        (lambda d: d.update(steps=[]), "$.steps"),
        (lambda d: d["steps"][0].update(message=[{"type": "text"}]), "$.steps[0].message"),
        (lambda d: d.update(subagent_trajectories=[copy.deepcopy(_DOC)]), "$.subagent_trajectories[0].trajectory_id"),
    ],
    ids=[
        "step-ids",
        "dangling-source-call",
        "agent-only-field",
        "dispatch-with-metrics",
        "version",
        "extra-key",
        "agent-version",
        "no-steps",
        "text-part-without-text",
        "subagent-without-id",
    ],
)
def test_each_fault_is_named_where_it_is(change: Any, path: str) -> None:
    found = atif_faults(_with(change))
    assert found, "expected a fault"
    assert any(f.path == path for f in found), [str(f) for f in found]


def test_a_step_standing_for_several_calls_names_its_summed_metrics() -> None:
    doc = _with(lambda d: d["steps"][1].update(llm_call_count=2))
    r = atif_to_rollout(doc)
    assert len(r["model_calls"]) == 3
    assert r["model_calls"][0]["token_stats"]["prompt"] is None
    assert "model_calls.aggregated_metrics" in {g["code"] for g in r["gaps"]}
