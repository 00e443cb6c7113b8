"""The checks of catalogue II on real reference episodes: when each applies, what passes, the words of what fails."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from itertools import pairwise
from typing import Any

from orchestrator.checks import Status
from orchestrator.checks.authored import known_notes
from orchestrator.checks.join import witness_key
from tests.unit.checks.conftest import Episode, load_episode


def _shift(stamp: str, seconds: float) -> str:
    return (datetime.fromisoformat(stamp) + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def _model(ep: Episode) -> list[dict[str, Any]]:
    return [e for e in ep.witness if e["event"] == "attempt" and e["kind"] == "model"]


def _gave_up_on_the_400(ep: Episode) -> None:
    """model_error as a scenario whose fault a harness could have recovered from: it ended there by itself."""
    ep.scenario["expected"]["outcome"] = "either"
    ep.scenario["faults"][0]["repeat"] = False


def test_error_propagated_applies_wherever_a_harness_gave_up_on_its_fault() -> None:
    ep = load_episode("model_error")
    _gave_up_on_the_400(ep)
    assert ep.evaluate()["error.propagated"] == (Status.PASS, [])  # the reference names the 400
    ep.rollout["outcome"].update(status="completed", final_answer="PROBE_DONE", failure_kind=None, failure_reason=None)
    status, reasons = ep.evaluate()["error.propagated"]
    assert status == Status.FAIL
    assert reasons[0].startswith("outcome.status is 'completed' with the final answer 'PROBE_DONE' although the")
    assert ep.execution is not None
    ep.execution.update(status="deadline", exit_code=None)  # killed while it waited: it never gave up
    assert ep.evaluate()["error.propagated"][0] == Status.NOT_APPLICABLE


def test_error_propagated_needs_the_record_to_reach_the_last_call() -> None:
    ep = load_episode("model_error")
    calls = ep.rollout["model_calls"]
    dropped = calls.pop()["model_call_id"]
    for holder in ep.rollout["invocations"]:
        holder["model_call_refs"].remove(dropped)
    status, reasons = ep.evaluate()["error.propagated"]
    assert status == Status.FAIL
    last = _model(ep)[-1]["attempt_id"]
    assert reasons == [
        f"the record stops before the last call the wire saw: {last} (HTTP 400 (http_error)) joins no recorded call"
    ]


def test_error_propagated_is_not_applicable_where_the_harness_recovered() -> None:
    assert load_episode("retry_after").evaluate()["error.propagated"][0] == Status.NOT_APPLICABLE


def test_retry_waited_says_how_soon_the_retry_came() -> None:
    ep = load_episode("retry_after")
    assert ep.evaluate()["retry.waited"] == (Status.PASS, [])
    first, retry = _model(ep)[:2]
    retry["started_at"] = _shift(first["completed_at"], 0.2)
    status, reasons = ep.evaluate()["retry.waited"]
    assert status == Status.FAIL
    assert reasons[0].startswith("retried the 429 after 0.20 s although asked to wait 3.0 s (attempt-0 answered at")
    # Within the tolerance of the wait asked: no finding.
    retry["started_at"] = _shift(first["completed_at"], 2.8)
    assert ep.evaluate()["retry.waited"][0] == Status.PASS


def test_retry_waited_applies_only_where_a_wait_was_asked() -> None:
    assert load_episode("retry_429").evaluate()["retry.waited"][0] == Status.NOT_APPLICABLE  # Retry-After: 0


def test_a_wait_recorded_nowhere_is_a_named_gap_and_one_recorded_anywhere_is_judged() -> None:
    ep = load_episode("retry_after")
    for call in ep.rollout["model_calls"]:
        call.pop("retry_delay_ms", None)
    status, reasons = ep.evaluate()["retry.wait_recorded"]
    assert status == Status.NOT_APPLICABLE and reasons[0].startswith("gap retry.wait_unrecorded:")
    other = load_episode("tool_success")
    other.rollout["model_calls"][0]["retry_delay_ms"] = 1000.0
    status, reasons = other.evaluate()["retry.wait_recorded"]
    assert status == Status.FAIL and "records waiting 1.0 s before its retry" in reasons[0]


def _malformed(ep: Episode) -> dict[str, Any]:
    (call,) = [e for e in ep.witness if e["event"] == "tool_call" and e.get("malformed")]
    return call


def test_a_truncated_command_that_ran_is_named_as_run() -> None:
    ep = load_episode("tool_args_truncated")
    assert ep.evaluate()["tools.args_not_run"] == (Status.PASS, [])
    call = _malformed(ep)
    ep.markers[f"{call['tool_call_id']}.txt"] = call["token"]
    status, reasons = ep.evaluate()["tools.args_not_run"]
    assert status == Status.FAIL
    assert reasons[0].startswith(f"ran the truncated command of {call['tool_call_id']}: its marker file was collected")


def test_a_record_that_hides_the_truncated_call_fails() -> None:
    ep = load_episode("tool_args_truncated")
    gone = _malformed(ep)["tool_call_id"]
    ep.rollout["tool_calls"] = [t for t in ep.rollout["tool_calls"] if t["tool_call_id"] != gone]
    for m in ep.rollout["invocations"][0]["conversation"]:
        m["tool_calls"] = [tc for tc in m.get("tool_calls", []) if tc["tool_call_id"] != gone]
    status, reasons = ep.evaluate()["tools.args_not_run"]
    assert status == Status.FAIL
    assert reasons == [
        f"{gone}: the record does not show the malformed call (no tool record, no history turn, no kept reply)"
    ]


def test_a_call_never_sent_is_judged_by_whether_it_ran_alone() -> None:
    # Gemini drops a call it could not parse (MALFORMED_FUNCTION_CALL): no record can show what never arrived.
    ep = load_episode("tool_args_truncated")
    call = _malformed(ep)
    call["not_sent"] = True
    gone = call["tool_call_id"]
    ep.rollout["tool_calls"] = [t for t in ep.rollout["tool_calls"] if t["tool_call_id"] != gone]
    for m in ep.rollout["invocations"][0]["conversation"]:
        m["tool_calls"] = [tc for tc in m.get("tool_calls", []) if tc["tool_call_id"] != gone]
    assert ep.evaluate()["tools.args_not_run"] == (Status.PASS, [])
    ep.markers[f"{gone}.txt"] = call["token"]
    status, reasons = ep.evaluate()["tools.args_not_run"]
    assert status == Status.FAIL and reasons[0].startswith(f"ran the truncated command of {gone}")


def test_the_truncated_call_is_no_tool_call_the_other_checks_look_for() -> None:
    results = load_episode("tool_args_truncated").evaluate()
    assert {k: v for k, v in results.items() if v[0] == Status.FAIL} == {}
    assert results["tools.witness_ids"] == (Status.PASS, [])  # its record is allowed, and not required


def _own_turn(ep: Episode, marked: bool) -> None:
    turn = "I will run each command I am asked to run."
    for a in _model(ep):
        a["request"]["messages"].insert(2, {"role": "assistant", "content": turn})
    entry: dict[str, Any] = {"role": "assistant", "content": turn}
    if marked:
        entry["origin"] = "harness"
    ep.rollout["invocations"][0]["conversation"].insert(2, entry)


def test_a_turn_of_the_harness_marked_as_its_own_passes() -> None:
    ep = load_episode("tool_success")
    _own_turn(ep, marked=True)
    assert ep.evaluate()["history.harness_authored"] == (Status.PASS, [])


def test_a_served_turn_marked_as_the_harnesss_own_fails() -> None:
    ep = load_episode("tool_success")
    served = next(m for m in ep.rollout["invocations"][0]["conversation"] if m["role"] == "assistant")
    served["origin"] = "harness"
    status, reasons = ep.evaluate()["history.harness_authored"]
    assert status == Status.FAIL and "is marked origin: harness, but the provider served it" in reasons[0]


def test_an_own_turn_recorded_nowhere_fails() -> None:
    ep = load_episode("tool_success")
    _own_turn(ep, marked=True)
    del ep.rollout["invocations"][0]["conversation"][2]
    status, reasons = ep.evaluate()["history.harness_authored"]
    assert status == Status.FAIL and "the rollout's history holds no such turn" in reasons[0]


def test_parity_needs_a_twin_and_names_what_differs() -> None:
    assert load_episode("tool_success").evaluate()["transport.parity"][0] == Status.NOT_APPLICABLE
    ep = load_episode("tool_success_twin")
    assert ep.evaluate()["transport.parity"] == (Status.PASS, [])
    assert ep.twin is not None
    ep.twin[0]["outcome"]["final_answer"] = "PROBE_DONE (streamed)"
    status, reasons = ep.evaluate()["transport.parity"]
    assert status == Status.FAIL
    assert reasons == [
        "the play over the other transport (twin/) normalizes otherwise: $.outcome.final_answer: "
        '"PROBE_DONE" here, "PROBE_DONE (streamed)" in the twin'
    ]


def test_an_unusable_200_joins_as_a_failed_attempt() -> None:
    attempt = {"ended": "complete", "status": 200, "response_id": "chatcmpl-x"}
    assert witness_key(attempt) == ("ok", "chatcmpl-x")
    for fault in ("sse_malformed", "error_event", "not_json"):
        assert witness_key({**attempt, "fault": fault}) == ("interrupted", None)
    assert witness_key({**attempt, "fault": "length_cut"}) == ("ok", "chatcmpl-x")  # a reply, cut at the limit


def test_a_transport_category_for_a_complete_unusable_200_is_wrong() -> None:
    ep = load_episode("retry_after")
    first = _model(ep)[0]
    first.update(status=200, fault="not_json", response=None, played={"body": "<html></html>"})
    call = next(c for c in ep.rollout["model_calls"] if c["error_category"])
    call.update(status_code=200, error_category="timeout", error="<html></html>")
    status, reasons = ep.evaluate()["attempts.exchange"]
    assert status == Status.FAIL
    assert any("error_category 'timeout', the wire shows a reply that ended 'complete'" in r for r in reasons), reasons
    call["error_category"] = "invalid_response"  # a category of its own naming claims no way of ending
    assert ep.evaluate()["attempts.exchange"] == (Status.PASS, [])
    assert json.dumps(first)  # still a witness event


def test_a_harness_known_to_write_its_own_turns_has_its_note_quoted_with_the_version() -> None:
    """NOOA's prefilled call, marked from its own trajectory, passes; unmarked, the finding quotes what is known."""
    ep = load_episode("native:nooa/retry_429")
    assert ep.evaluate()["history.harness_authored"] == (Status.PASS, [])
    for inv in ep.rollout["invocations"]:
        for m in inv["conversation"]:
            m.pop("origin", None)
    status, reasons = ep.evaluate()["history.harness_authored"]
    assert status == Status.FAIL
    assert "calling prefill_" in reasons[0] and "not marked origin: harness" in reasons[0]
    assert reasons[-1].startswith("NOOA runs an inspect-inputs execute_python cell") and reasons[-1].endswith(
        "(seen on nooa 0.0.10)"
    )
    assert known_notes("nooa", "0.0.9") == [] and known_notes("pi", "0.0.10") == []


def test_a_record_of_the_parse_failure_shows_the_call_and_a_repaired_command_does_not() -> None:
    """OpenCode 1.18.33 records the cut-off call as its `invalid` tool, arguments {tool, error: "...JSON parsing
    failed: Text: <the text>..."}, status succeeded (the `invalid` tool ran, to tell the model): that shows the call.
    An object holding the command read out of the text is a repair."""
    ep = load_episode("tool_args_truncated")
    call = _malformed(ep)
    record = next(t for t in ep.rollout["tool_calls"] if t["tool_call_id"] == call["tool_call_id"])
    error = f"Invalid input for tool bash: JSON parsing failed: Text: {call['arguments_text']}.\nError message: x"
    record.update(tool_name="invalid", arguments={"tool": "bash", "error": error}, status="succeeded")
    assert ep.evaluate()["tools.args_not_run"] == (Status.PASS, [])
    command = call["arguments"]["command"]
    record.update(tool_name="bash", arguments={"command": command[:-3]}, status="failed")  # a partial repair
    status, reasons = ep.evaluate()["tools.args_not_run"]
    assert status == Status.FAIL and "repaired from what was sent" in reasons[0]


def test_a_step_delivered_as_text_is_judged_only_on_whether_it_ran() -> None:
    """Terminus 2 gets its steps as keystroke JSON in text: no call id on the wire, so no record can be joined to the
    cut-off call; whether its command ran is still judged."""
    ep = load_episode("tool_args_truncated")
    ep.scenario["harness_profile"] = {"delivery": "keystrokes"}
    gone = _malformed(ep)["tool_call_id"]
    ep.rollout["tool_calls"] = [t for t in ep.rollout["tool_calls"] if t["tool_call_id"] != gone]
    assert ep.evaluate()["tools.args_not_run"] == (Status.PASS, [])
    ep.markers[f"{gone}.txt"] = _malformed(ep)["token"]
    status, reasons = ep.evaluate()["tools.args_not_run"]
    assert status == Status.FAIL and reasons[0].startswith(f"ran the truncated command of {gone}")


def test_a_recorded_wait_is_held_only_to_the_attempt_its_call_certainly_was() -> None:
    """With one of two 429s dropped, which 429 the one left was is a guess: its wait is not held to a guess (the
    dropped attempt is attempts.multiset's finding), as the reference's drop_failed_attempt mode showed."""
    ep = load_episode("retry_429")
    model = _model(ep)
    failed = [c for c in ep.rollout["model_calls"] if c["error_category"]]
    for call, (a, b) in zip(failed, pairwise(model), strict=False):
        gap = datetime.fromisoformat(b["started_at"]) - datetime.fromisoformat(a["completed_at"])
        call["retry_delay_ms"] = gap.total_seconds() * 1000
    assert ep.evaluate()["retry.wait_recorded"] == (Status.PASS, [])
    dropped = failed[0]["model_call_id"]
    ep.rollout["model_calls"] = [c for c in ep.rollout["model_calls"] if c["model_call_id"] != dropped]
    for holder in (*ep.rollout["invocations"], *ep.rollout["steps"]):
        holder["model_call_refs"] = [r for r in holder["model_call_refs"] if r != dropped]
    results = ep.evaluate()
    assert results["retry.wait_recorded"] == (Status.PASS, [])
    assert results["attempts.multiset"][0] == Status.FAIL


def test_a_reply_the_harness_kept_shows_the_call_it_could_not_parse() -> None:
    """mini-SWE-agent 2.4.6 keeps a reply it could not parse only inside its format-error message (the call's
    `response`): the call, with its arguments as sent, is shown there."""
    ep = load_episode("tool_args_truncated")
    call = _malformed(ep)
    gone = call["tool_call_id"]
    ep.rollout["tool_calls"] = [t for t in ep.rollout["tool_calls"] if t["tool_call_id"] != gone]
    for m in ep.rollout["invocations"][0]["conversation"]:
        m["tool_calls"] = [tc for tc in m.get("tool_calls", []) if tc["tool_call_id"] != gone]
    kept = {"id": gone, "type": "function", "function": {"name": "bash", "arguments": call["arguments_text"]}}
    ep.rollout["model_calls"][0]["response"] = {"choices": [{"message": {"tool_calls": [kept]}}]}
    assert ep.evaluate()["tools.args_not_run"] == (Status.PASS, [])
    kept["function"]["arguments"] = json.dumps(call["arguments"])  # the reply kept with the arguments repaired
    status, reasons = ep.evaluate()["tools.args_not_run"]
    assert status == Status.FAIL and "its kept reply gives arguments" in reasons[0]
