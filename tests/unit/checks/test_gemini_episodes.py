"""The checks on real Gemini episodes (the reference harness speaking `generateContent` through google-genai): the
honest ones pass, and every negative control that has a Gemini twin of its fixture fails exactly its check there too.

The Gemini fixtures are `tests/fixtures/episodes/gemini_<scenario>`, captured from the runs behind the reference's
`protocol=gemini` catalogue (JSON and streamed).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from orchestrator.checks import Status
from orchestrator.checks.authored import Turn, wire_turns
from orchestrator.checks.compaction import witnessed_compactions
from orchestrator.checks.continuation import result_ids
from orchestrator.checks.evidence import Witness
from tests.unit.checks.conftest import FIXTURES, Episode, dependents, load_episode
from tests.unit.checks.test_lies_accuracy import lie_step_moved_to_sub_agent
from tests.unit.checks.test_negative_controls import CONTROLS


def m_args_not_run(ep: Episode) -> None:
    # Gemini drops a call that did not parse whole (MALFORMED_FUNCTION_CALL, witnessed not_sent): there are no cut
    # arguments a record could repair, only whether the command ran is judged. The lie: a harness that guessed the
    # call and ran it anyway, its marker left in the sandbox.
    (dropped,) = [c for c in ep.witness if c["event"] == "tool_call" and c.get("malformed")]
    assert dropped.get("not_sent") and "arguments_text" not in dropped
    ep.markers[f"{dropped['tool_call_id']}.txt"] = dropped["token"]


# The controls whose mutation cannot apply to Gemini's form of the fault, and the one used there instead.
ON_GEMINI = {"tools.args_not_run": m_args_not_run}
GEMINI = sorted(p.name for p in FIXTURES.iterdir() if p.name.startswith("gemini_"))
TWINS = [(c, f"gemini_{f}", ON_GEMINI.get(c, m)) for c, f, m in CONTROLS if f"gemini_{f}" in GEMINI]


def test_the_gemini_fixtures_are_gemini() -> None:
    assert len(GEMINI) >= 6
    for name in GEMINI:
        ep = load_episode(name)
        protocols = {a.get("protocol") for a in ep.witness if a["event"] == "attempt" and a["kind"] == "model"}
        assert protocols == {"gemini"} and {c["protocol"] for c in ep.rollout["model_calls"]} == {"gemini"}


@pytest.mark.parametrize("name", GEMINI)
def test_honest_gemini_episode_passes_every_applicable_check(name: str) -> None:
    failed = {k: v[1] for k, v in load_episode(name).evaluate().items() if v[0] == Status.FAIL}
    assert failed == {}


def test_most_controls_have_a_gemini_twin() -> None:
    assert len(TWINS) >= len(CONTROLS) - 4


def _fails_exactly(ep: Episode, honest: dict[str, Any], check_id: str) -> None:
    after = ep.evaluate()
    assert after[check_id][0] == Status.FAIL, after[check_id]
    blocked = dependents(check_id)
    changed = {k for k, v in after.items() if v[0] != honest[k][0] and k != check_id}
    assert changed <= blocked, {k: after[k] for k in changed - blocked}


@pytest.mark.parametrize(("check_id", "fixture", "mutate"), TWINS, ids=[f"{c}-{f}" for c, f, _ in TWINS])
def test_mutation_fails_exactly_its_check_on_gemini(check_id: str, fixture: str, mutate: Any) -> None:
    honest = load_episode(fixture)
    before = honest.evaluate()
    ep = honest.copy()
    mutate(ep)
    _fails_exactly(ep, before, check_id)


def test_a_gemini_conversation_split_between_owners_fails_wire_sessions() -> None:
    # The reference sends no session header: only the functionResponse ids in the requests' `contents` tie a
    # request to the reply whose call it answers, so this fails only if those ids are read.
    honest = load_episode("gemini_tool_failure")
    before = honest.evaluate()
    assert before["ownership.wire_sessions"][0] == Status.NOT_APPLICABLE
    ep = honest.copy()
    lie_step_moved_to_sub_agent(ep)
    _fails_exactly(ep, before, "ownership.wire_sessions")


def test_function_response_ids_are_read_from_gemini_requests_in_both_spellings() -> None:
    request = {
        "contents": [
            {"role": "user", "parts": [{"functionResponse": {"id": "a", "name": "bash", "response": {}}}]},
            {"role": "user", "parts": [{"function_response": {"id": "b", "name": "bash", "response": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "no_id", "response": {}}}, {"text": "x"}]},
        ]
    }
    assert result_ids(request) == {"a", "b"}


def test_a_gemini_history_that_drops_a_seen_result_is_witnessed_as_compaction() -> None:
    ep = load_episode("gemini_tool_success")
    witness = [dict(e) for e in ep.witness]
    models = [a for a in witness if a["event"] == "attempt" and a["kind"] == "model"]
    assert witnessed_compactions(Witness(witness)) == []
    last = models[-1]["request"]
    last["contents"] = [c for c in last["contents"] if not any("functionResponse" in p for p in c["parts"])]
    # The first call's result, which the second request carried, is gone from the last (the second's first came
    # in the last request, so it was never seen before it).
    (found,) = witnessed_compactions(Witness(witness))
    assert found.attempt is models[-1] and found.dropped == tuple(models[0]["tool_call_ids"])


def test_the_model_turns_of_a_gemini_request_are_read_as_assistant_turns() -> None:
    request = {
        "contents": [
            {"role": "user", "parts": [{"text": "task"}]},
            {"role": "model", "parts": [{"text": " I will run it. "}, {"text": "hidden", "thought": True}]},
            {"role": "model", "parts": [{"functionCall": {"id": "a", "name": "bash", "args": {}}}]},
            {"role": "model", "parts": [{"function_call": {"id": "b", "name": "bash", "args": {}}}]},
        ]
    }
    assert list(wire_turns(request)) == [Turn((), "I will run it."), Turn(("a",), ""), Turn(("b",), "")]


def test_an_own_model_turn_on_gemini_recorded_as_the_models_fails_harness_authored() -> None:
    # The reference's own_turn sends its own `model` content ahead of the first call: only reading Gemini's
    # contents finds it on the wire.
    honest = load_episode("gemini_tool_success_own_turn")
    assert honest.evaluate()["history.harness_authored"] == (Status.PASS, [])
    ep = honest.copy()
    for m in ep.rollout["invocations"][0]["conversation"]:
        m.pop("origin", None)
    status, reasons = ep.evaluate()["history.harness_authored"]
    assert status == Status.FAIL and "not marked origin: harness" in reasons[0], reasons


def test_a_kept_error_message_that_spans_lines_is_found_as_kept() -> None:
    # Google's quota message spans lines: kept as the body's structure (the reference) or as its JSON text (a
    # harness storing the raw body), it is the message; json.dumps of the structure escaped its newlines, and the
    # honest reference failed errors.payload_retained in quota_window on Gemini.
    ep = load_episode("gemini_retry_429")
    failures = [a for a in ep.witness if a["event"] == "attempt" and a["kind"] == "model" and a["status"] == 429]
    calls = [c for c in ep.rollout["model_calls"] if c.get("status_code") == 429]
    assert failures and len(failures) == len(calls)
    message = "You exceeded your quota.\n* Quota exceeded for metric: requests, limit: 1\nPlease retry in 9.9s."
    for attempt, call in zip(failures, calls, strict=True):
        attempt["response"] = {"error": {"code": 429, "message": message, "status": "RESOURCE_EXHAUSTED"}}
        call["error"] = {"error": {"code": 429, "message": message, "status": "RESOURCE_EXHAUSTED"}}
    assert ep.evaluate()["errors.payload_retained"][0] == Status.PASS
    for call in calls:
        call["error"] = json.dumps({"error": {"message": message}})
    assert ep.evaluate()["errors.payload_retained"][0] == Status.PASS
    calls[0]["error"] = {"error": {"code": 429, "message": message.replace("9.9s", "1.0s")}}
    status, reasons = ep.evaluate()["errors.payload_retained"]
    assert status == Status.FAIL and "payload lacks the message" in reasons[0]
