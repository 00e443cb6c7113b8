"""A final answer delivered through the shell (witness `final_submit`): no result comes back, its marker counts."""

from __future__ import annotations

import pytest

from orchestrator.checks import Status
from orchestrator.evidence import faults
from tests.unit.checks.conftest import Episode, load_episode

PREFIX = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
CALL_ID = "call_finalsubmit0000000000000000000"
TOKEN = "probe_finalsubmit000000000000000000000"


def shell_final(ep: Episode) -> Episode:
    """The honest tool_success episode as a harness ending through its shell would produce it.

    The final reply carries one shell call instead of text; the proxy witnessed that call, checked its marker
    at stop (no request ever carried its result), and the harness recorded the call as run, then finished.
    """
    final = next(e for e in ep.witness if e["event"] == "attempt" and e["reply_kind"] == "final_answer")
    final["tool_call_ids"] = [CALL_ID]
    final["finish_reason"] = "tool_calls"
    command = f"printf '%s' {TOKEN} > /probe/markers/{CALL_ID}.txt && printf '%s\\n%s' {PREFIX} PROBE_DONE"
    end = ep.witness.pop()
    for event in (
        {
            "event": "tool_call",
            "attempt_id": final["attempt_id"],
            "tool_call_id": CALL_ID,
            "name": "bash",
            "arguments": {"command": command},
            "command": command,
            "marker_path": f"/probe/markers/{CALL_ID}.txt",
            "token": TOKEN,
            "exit_code": 0,
            "expected_output": f"{PREFIX}\nPROBE_DONE",
            "final_submit": True,
        },
        {"event": "marker", "tool_call_id": CALL_ID, "present": True, "matches": True},
    ):
        ep.add_event(event)
    ep.add_event({k: v for k, v in end.items() if k not in ("seq", "at", "schema")})
    ep.markers[f"{CALL_ID}.txt"] = TOKEN

    r = ep.rollout
    call = next(c for c in r["model_calls"] if c["response_id"] == final["response_id"])
    call["finish_reason"] = "tool_calls"
    last = next(m for m in reversed(r["invocations"][0]["conversation"]) if m["role"] == "assistant")
    last["content"] = None
    last["tool_calls"] = [{"tool_call_id": CALL_ID, "tool_name": "bash", "arguments": {"command": command}}]
    r["tool_calls"].append(
        {
            "tool_call_id": CALL_ID,
            "tool_name": "bash",
            "arguments": {"command": command},
            "status": "succeeded",
            "exit_code": 0,
            "output": "PROBE_DONE",
            "invocation_id": r["invocations"][0]["invocation_id"],
            "step_no": 3,
        }
    )
    return ep


def failures(ep: Episode) -> dict[str, list[str]]:
    return {k: reasons for k, (status, reasons) in ep.evaluate().items() if status == Status.FAIL}


@pytest.fixture
def episode() -> Episode:
    return shell_final(load_episode("tool_success"))


def test_honest_final_submit_episode_passes_every_check(episode: Episode) -> None:
    assert [faults(e, "probe-witness/v1") for e in episode.witness] == [[]] * len(episode.witness)
    assert failures(episode) == {}


def test_the_exemption_is_the_final_submit_flag_and_nothing_else(episode: Episode) -> None:
    call = next(e for e in episode.witness if e["event"] == "tool_call" and e["tool_call_id"] == CALL_ID)
    del call["final_submit"]
    assert failures(episode) == {
        "witness.results_seen": [f"{CALL_ID}: no later request carried its result"],
        "tools.witness_output": ["blocked by witness.results_seen"],
        "history.witness_results": ["blocked by witness.results_seen"],
    }


def test_its_marker_is_still_required(episode: Episode) -> None:
    episode.witness[:] = [e for e in episode.witness if not (e["event"] == "marker" and e["tool_call_id"] == CALL_ID)]
    del episode.markers[f"{CALL_ID}.txt"]
    assert failures(episode) == {
        "witness.tools_executed": [
            f"{CALL_ID}: the proxy never saw its marker with the token",
            f"{CALL_ID}: collected marker file missing",
        ]
    }


def test_its_record_and_status_are_still_required(episode: Episode) -> None:
    record = next(t for t in episode.rollout["tool_calls"] if t["tool_call_id"] == CALL_ID)
    # What mini-SWE-agent 2.4.6 records for the command it ended on: not executed, return code -1.
    record.update(status="failed", exit_code=-1)
    assert failures(episode) == {
        "tools.witness_status": [
            f"{CALL_ID}: status 'failed', the command exited 0",
            f"{CALL_ID}: exit_code -1, the command exited 0",
        ]
    }
    episode.rollout["tool_calls"].remove(record)
    assert failures(episode)["tools.witness_ids"] == [f"{CALL_ID}: witnessed once, recorded 0 times"]
