"""Our ATIF reader on a trajectory Terminus 2 (terminus-ai 2.0.4) wrote itself."""

from __future__ import annotations

from pathlib import Path

from orchestrator.atif import ATIF_GAPS, atif_to_rollout, load_atif, rollout_to_atif, validate_atif

_FILE = Path(__file__).resolve().parents[2] / "fixtures" / "atif" / "terminus-cli-2.0.4" / "trajectory.json"


def test_terminus_trajectory_validates_and_reads_what_it_holds() -> None:
    doc = load_atif(_FILE)
    assert doc["schema_version"] == "ATIF-v1.8"
    r = atif_to_rollout(doc)
    assert r["harness"] == {"name": "terminus-cli", "version": "2.0.4"}
    # Three replies, three steps, each with the usage the server sent (prompt 100+k, completion 10+k).
    assert [(c["token_stats"]["prompt"], c["token_stats"]["completion"]) for c in r["model_calls"]] == [
        (100, 10),
        (101, 11),
        (102, 12),
    ]
    assert [s["step_no"] for s in r["steps"]] == [1, 2, 3]
    assert [t["tool_name"] for t in r["tool_calls"]] == ["bash_command", "mark_task_complete", "mark_task_complete"]
    assert r["tool_calls"][0]["arguments"]["keystrokes"].startswith("printf tok123")
    # One shared screen per step, tied to no command: no output is attributed, the model got it as input.
    assert all(t["output"] is None for t in r["tool_calls"])
    screens = [m["content"] for m in r["invocations"][0]["conversation"] if m["role"] == "user"]
    assert any("tok123" in s for s in screens)
    # Terminus ends on a confirmation, not an answer text: the outcome is unknown, and ATIF's gaps are named.
    assert r["outcome"]["status"] == "unknown"
    assert {g["code"] for g in r["gaps"]} == {g["code"] for g in ATIF_GAPS}


def test_terminus_trajectory_written_again_validates() -> None:
    r = atif_to_rollout(load_atif(_FILE))
    validate_atif(rollout_to_atif(r, "ATIF-v1.7"))
