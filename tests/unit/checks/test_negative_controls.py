"""Every check has a negative control: a mutation of a real honest episode that makes exactly that check fail.

Checks that depend on it fail as `blocked by`, and every other check keeps its honest status.
"""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator.checks import REGISTRY, Status
from tests.unit.checks.conftest import Episode, dependents, load_episode

FIXTURE_NAMES = ("tool_success", "tool_failure", "retry_429", "model_error", "parallel_tools", "context_compaction")


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_honest_episode_passes_every_applicable_check(name: str) -> None:
    results = load_episode(name).evaluate()
    failed = {k: v[1] for k, v in results.items() if v[0] == Status.FAIL}
    assert failed == {}


def _calls(ep: Episode) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = ep.rollout["model_calls"]
    return calls


def _failed_calls(ep: Episode) -> list[dict[str, Any]]:
    return [c for c in _calls(ep) if c["error_category"]]


def _ok_calls(ep: Episode) -> list[dict[str, Any]]:
    return [c for c in _calls(ep) if not c["error_category"]]


def _tool_messages(ep: Episode, call_id: str) -> list[dict[str, Any]]:
    return [m for m in ep.rollout["invocations"][0]["conversation"] if m.get("tool_call_id") == call_id]


def _requesting(ep: Episode, call_id: str) -> dict[str, Any]:
    for m in ep.rollout["invocations"][0]["conversation"]:
        for tc in m.get("tool_calls") or []:
            if tc["tool_call_id"] == call_id:
                return tc
    raise AssertionError(call_id)


def _witness(ep: Episode, event: str) -> list[dict[str, Any]]:
    return [e for e in ep.witness if e["event"] == event]


def m_format(ep: Episode) -> None:
    del ep.rollout["gaps"]


def m_calls_present(ep: Episode) -> None:
    ep.rollout["model_calls"] = []


def m_calls_identity(ep: Episode) -> None:
    _calls(ep)[1]["model_call_id"] = _calls(ep)[0]["model_call_id"]


def m_calls_protocol(ep: Episode) -> None:
    _calls(ep)[0]["protocol"] = "grpc"


def m_calls_timing(ep: Episode) -> None:
    c = _calls(ep)[0]
    c["started_at"], c["completed_at"] = c["completed_at"], c["started_at"]
    c["completed_at"] = "2000-01-01T00:00:00Z"


def m_calls_outcome(ep: Episode) -> None:
    _ok_calls(ep)[-1]["finish_reason"] = None


def m_tokens_fields(ep: Episode) -> None:
    _calls(ep)[0]["token_stats"]["prompt"] = -1


def m_invocations_identity(ep: Episode) -> None:
    ep.rollout["invocations"][0]["invocation_id"] = ""


def m_steps_numbering(ep: Episode) -> None:
    ep.rollout["steps"][1]["step_no"] = 5


def m_tools_record(ep: Episode) -> None:
    ep.rollout["tool_calls"][0]["status"] = None


def m_outcome_fields(ep: Episode) -> None:
    ep.rollout["outcome"]["status"] = "unknown"


def m_history(ep: Episode) -> None:
    first = ep.rollout["tool_calls"][0]["tool_call_id"]
    conv = ep.rollout["invocations"][0]["conversation"]
    conv[:] = [m for m in conv if m.get("tool_call_id") != first]


def m_parent(ep: Episode) -> None:
    ep.rollout["invocations"][0]["parent_invocation_id"] = "inv-nowhere"


def m_ownership(ep: Episode) -> None:
    ep.rollout["invocations"][0]["model_call_refs"].pop(0)


def m_steps_call_refs(ep: Episode) -> None:
    ep.rollout["steps"][0]["model_call_refs"].append("mc-ghost")


def m_attempt_accounting(ep: Episode) -> None:
    ep.rollout["steps"][1]["model_call_refs"].append(ep.rollout["steps"][0]["model_call_refs"][0])


def m_request_join(ep: Episode) -> None:
    _requesting(ep, ep.rollout["tool_calls"][0]["tool_call_id"])["tool_name"] = "python"


def m_gaps(ep: Episode) -> None:
    ep.rollout["gaps"].append({"code": "model_calls.usage_unreported", "detail": "no usage", "labels": ["E2"]})


def m_violation(ep: Episode) -> None:
    ep.add_event({"event": "violation", "attempt_id": None, "code": "unknown_route", "detail": "GET /v1/other"})


def m_marker_missing(ep: Episode) -> None:
    ep.markers.pop(sorted(ep.markers)[0])


def m_results_seen(ep: Episode) -> None:
    first = _witness(ep, "tool_call")[0]["tool_call_id"]
    ep.witness[:] = [e for e in ep.witness if not (e["event"] == "tool_result_seen" and e["tool_call_id"] == first)]


def m_final_sent(ep: Episode) -> None:
    for a in _witness(ep, "attempt"):
        if a.get("reply_kind") == "final_answer":
            a["reply_kind"] = None


def m_multiset(ep: Episode) -> None:
    _ok_calls(ep)[0]["response_id"] = "chatcmpl-never-sent"


def m_response_metadata(ep: Episode) -> None:
    _ok_calls(ep)[0]["finish_reason"] = "length"


def m_tokens_match(ep: Episode) -> None:
    _ok_calls(ep)[0]["token_stats"]["total"] += 1


def m_payload(ep: Episode) -> None:
    _failed_calls(ep)[0]["error"] = None


def m_steps_witness(ep: Episode) -> None:
    steps = ep.rollout["steps"]
    moved = steps[0]["model_call_refs"].pop(0)
    steps[1]["model_call_refs"].insert(0, moved)


def m_retry_identical(ep: Episode) -> None:
    model = [a for a in _witness(ep, "attempt") if a["kind"] == "model"]
    model[1]["request"] = {**model[1]["request"], "temperature": 0.5}


def m_witness_ids(ep: Episode) -> None:
    ep.rollout["tool_calls"].pop(0)


def m_witness_request(ep: Episode) -> None:
    tool = ep.rollout["tool_calls"][0]
    tool["arguments"] = {"command": "echo something else"}
    _requesting(ep, tool["tool_call_id"])["arguments"] = {"command": "echo something else"}


def m_witness_status(ep: Episode) -> None:
    tool = ep.rollout["tool_calls"][0]
    tool["status"] = "failed" if tool["status"] == "succeeded" else "succeeded"


def m_witness_output(ep: Episode) -> None:
    tool = ep.rollout["tool_calls"][0]
    tool["output"] += " (edited)"
    for m in _tool_messages(ep, tool["tool_call_id"]):
        m["content"] += " (edited)"


def m_final_answer(ep: Episode) -> None:
    ep.rollout["outcome"]["final_answer"] = "SOMETHING_ELSE"


def m_terminal_error(ep: Episode) -> None:
    ep.rollout["outcome"].update(status="completed", final_answer="PROBE_DONE", failure_kind=None, failure_reason=None)


def m_exit_status(ep: Episode) -> None:
    # Hermes and Pi under model_error: a terminal HTTP 400, then exit 0.
    assert ep.execution is not None
    ep.execution["exit_code"] = 0


def m_compaction(ep: Episode) -> None:
    # A harness that hides its compaction: no record, and its summarization calls left out of the rollout.
    helpers = {ref for c in ep.rollout.pop("compactions") for ref in c["model_call_refs"]}
    ep.rollout["model_calls"] = [c for c in _calls(ep) if c["model_call_id"] not in helpers]
    for inv in ep.rollout["invocations"]:
        inv["model_call_refs"] = [r for r in inv["model_call_refs"] if r not in helpers]


def m_egress(ep: Episode) -> None:
    ep.add_event({"event": "egress", "kind": "dns", "target": "telemetry.example.com", "detail": "A"})


CONTROLS = [
    ("rollout.format", "tool_success", m_format),
    ("calls.present", "tool_success", m_calls_present),
    ("calls.identity", "tool_success", m_calls_identity),
    ("calls.protocol", "tool_success", m_calls_protocol),
    ("calls.timing", "tool_success", m_calls_timing),
    ("calls.outcome", "tool_success", m_calls_outcome),
    ("tokens.fields", "tool_success", m_tokens_fields),
    ("invocations.identity", "tool_success", m_invocations_identity),
    ("steps.numbering", "tool_success", m_steps_numbering),
    ("tools.record", "tool_success", m_tools_record),
    ("outcome.fields", "tool_success", m_outcome_fields),
    ("history.rebuildable", "tool_success", m_history),
    ("invocations.parent", "tool_success", m_parent),
    ("ownership.call_owner", "tool_success", m_ownership),
    ("steps.call_refs", "tool_success", m_steps_call_refs),
    ("steps.attempt_accounting", "tool_success", m_attempt_accounting),
    ("tools.request_join", "tool_success", m_request_join),
    ("gaps.none_voiding", "tool_success", m_gaps),
    ("witness.no_violations", "tool_success", m_violation),
    ("witness.tools_executed", "tool_success", m_marker_missing),
    ("witness.results_seen", "tool_success", m_results_seen),
    ("witness.final_answer_sent", "tool_success", m_final_sent),
    ("attempts.multiset", "tool_success", m_multiset),
    ("calls.response_metadata", "tool_success", m_response_metadata),
    ("tokens.match", "tool_success", m_tokens_match),
    ("errors.payload_retained", "retry_429", m_payload),
    ("steps.witness_attempts", "retry_429", m_steps_witness),
    ("attempts.retry_identical", "retry_429", m_retry_identical),
    ("tools.witness_ids", "tool_success", m_witness_ids),
    ("tools.witness_request", "tool_success", m_witness_request),
    ("tools.witness_status", "tool_failure", m_witness_status),
    ("tools.witness_output", "tool_success", m_witness_output),
    ("outcome.final_answer", "tool_success", m_final_answer),
    ("outcome.terminal_error", "model_error", m_terminal_error),
    ("egress.none", "tool_success", m_egress),
    ("compaction.recorded", "context_compaction", m_compaction),
    ("process.exit_status", "model_error", m_exit_status),
]


def test_every_check_has_a_negative_control() -> None:
    assert sorted(c for c, _, _ in CONTROLS) == sorted(REGISTRY)


@pytest.mark.parametrize(("check_id", "fixture", "mutate"), CONTROLS, ids=[c for c, _, _ in CONTROLS])
def test_mutation_fails_exactly_its_check(check_id: str, fixture: str, mutate: Any) -> None:
    honest = load_episode(fixture)
    before = honest.evaluate()
    assert before[check_id][0] == Status.PASS, f"{check_id} does not pass on the honest {fixture}: {before[check_id]}"
    mutated = honest.copy()
    mutate(mutated)
    after = mutated.evaluate()
    status, reasons = after[check_id]
    assert status == Status.FAIL
    assert reasons and not reasons[0].startswith(("blocked by", "required input", "checker error")), reasons
    failed = {k for k, (s, _) in after.items() if s == Status.FAIL}
    blocked = {k for k in failed - {check_id} if after[k][1][0].startswith("blocked by")}
    assert failed - {check_id} - blocked == set(), {k: after[k][1] for k in failed - {check_id} - blocked}
    assert blocked <= dependents(check_id)
    for k, (s, _) in after.items():
        if k not in failed:
            assert s == before[k][0], f"{k} changed from {before[k][0]} to {s}"


def test_successes_without_response_ids_are_still_compared_in_order() -> None:
    """A harness that keeps no response ids must not pass the token check by having nothing compared."""
    ep = load_episode("tool_success")
    for call in _ok_calls(ep):
        call["response_id"] = None
    _ok_calls(ep)[1]["token_stats"]["prompt"] = 0
    results = ep.evaluate()
    assert results["tokens.match"][0] == Status.FAIL
    assert "token_stats.prompt is 0" in results["tokens.match"][1][0]
    assert results["attempts.multiset"][0] == Status.FAIL


def test_exit_status_is_judged_both_ways_and_never_for_a_killed_harness() -> None:
    """A completed episode must exit 0; a timeout or deadline has no exit status to judge; artifacts never move."""
    ep = load_episode("tool_success")
    honest = ep.evaluate()
    assert ep.execution is not None
    ep.execution["exit_code"] = 3
    failed = ep.evaluate()
    assert failed["process.exit_status"][0] == Status.FAIL
    assert "final answer" in failed["process.exit_status"][1][0]
    assert {k: v for k, v in failed.items() if k != "process.exit_status"} == {
        k: v for k, v in honest.items() if k != "process.exit_status"
    }
    for status in ("timeout", "deadline", "unknown"):
        ep.execution.update(status=status, exit_code=None)
        assert ep.evaluate()["process.exit_status"][0] == Status.NOT_APPLICABLE


def test_compaction_must_happen_and_each_record_must_resolve() -> None:
    """Pushed to its window, a harness that never compacts fails; a record naming a step that is not there fails."""
    never = load_episode("tool_success")
    never.scenario["scope"]["compaction"] = True
    status, reasons = never.evaluate()["compaction.recorded"]
    assert status == Status.FAIL and "never compacted" in reasons[0]
    ep = load_episode("context_compaction")
    ep.rollout["compactions"][0]["step_no"] = 99
    status, reasons = ep.evaluate()["compaction.recorded"]
    assert status == Status.FAIL and reasons == ["compactions[0]: step_no 99 is not a recorded step"]
    # Outside a compaction scenario the check does not apply.
    assert load_episode("tool_success").evaluate()["compaction.recorded"][0] == Status.NOT_APPLICABLE


def test_compaction_calls_belong_to_no_step() -> None:
    ep = load_episode("context_compaction")
    helper = ep.rollout["compactions"][0]["model_call_refs"][0]
    ep.rollout["steps"][0]["model_call_refs"].append(helper)
    status, reasons = ep.evaluate()["steps.attempt_accounting"]
    assert status == Status.FAIL and reasons == [f"call {helper}: in 1 steps, expected exactly 0"]
