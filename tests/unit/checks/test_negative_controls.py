"""Every check has a negative control: a mutation of a real honest episode that makes exactly that check fail.

Checks that depend on it fail as `blocked by`, and every other check keeps its honest status.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import pytest

from orchestrator.checks import REGISTRY, Status
from orchestrator.checks.attempts import TOKEN_FIELDS
from tests.unit.checks.conftest import Episode, dependents, load_episode

FIXTURE_NAMES = (
    "tool_success",
    "tool_failure",
    "retry_429",
    "model_error",
    "parallel_tools",
    "context_compaction",
    "retry_after",
    "tool_args_truncated",
    "tool_success_twin",
    "tool_success_own_turn",
)


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
    # The tool record only: the history's arguments are held to the wire by history.witness_results, so the same
    # edit made in the history too fails both (test_lies_accuracy's coherent edit).
    tool = ep.rollout["tool_calls"][0]
    tool["arguments"] = {"command": "echo something else"}


def m_witness_status(ep: Episode) -> None:
    tool = ep.rollout["tool_calls"][0]
    tool["status"] = "failed" if tool["status"] == "succeeded" else "succeeded"


def m_witness_output(ep: Episode) -> None:
    tool = ep.rollout["tool_calls"][0]
    # Only the tool record: the history's copy of the result is history.witness_results's to compare.
    tool["output"] += " (edited)"


def m_final_answer(ep: Episode) -> None:
    ep.rollout["outcome"]["final_answer"] = "SOMETHING_ELSE"


def m_terminal_error(ep: Episode) -> None:
    ep.rollout["outcome"].update(status="completed", final_answer="PROBE_DONE", failure_kind=None, failure_reason=None)


def m_exchange(ep: Episode) -> None:
    # A success's recorded status changed to another 2xx: every join key still matches.
    _ok_calls(ep)[0]["status_code"] = 201


def m_witness_times(ep: Episode) -> None:
    # The last call recorded as starting 5 s after the proxy had answered it (still in order, still well-formed).
    last = _calls(ep)[-1]
    answered = [a for a in _witness(ep, "attempt") if a["kind"] == "model"][-1]["completed_at"]
    when = datetime.fromisoformat(answered)
    last["started_at"] = (when + timedelta(seconds=5)).isoformat().replace("+00:00", "Z")
    last["completed_at"] = (when + timedelta(seconds=6)).isoformat().replace("+00:00", "Z")


def m_history_witness(ep: Episode) -> None:
    # The tool record keeps the true output; only the history the model is said to have seen is edited.
    first = ep.rollout["tool_calls"][0]["tool_call_id"]
    for m in _tool_messages(ep, first):
        m["content"] = "all tests passed\n"


def m_witness_task(ep: Episode) -> None:
    # The task the history says the model was given, edited (the requests on the wire carried the true one).
    task = next(m for m in ep.rollout["invocations"][0]["conversation"] if m["role"] == "user")
    task["content"] = task["content"].replace("Run the shell commands", "Delete the files")


def m_witness_text(ep: Episode) -> None:
    # The final answer reworded in the history alone (the outcome keeps the true one, outcome.final_answer's field).
    last = [m for m in ep.rollout["invocations"][0]["conversation"] if m["role"] == "assistant"][-1]
    last["content"] += " All tests pass."


def m_steps_witness_times(ep: Episode) -> None:
    # The first step stamped ten minutes after its life on the wire ended (still well-formed, still in order of
    # step numbers: nothing but the wire says it is wrong).
    step = ep.rollout["steps"][0]
    step["timestamp"] = _shift(step["timestamp"], 600)


def m_witness_response(ep: Episode) -> None:
    # mini-SWE-agent keeps each reply's body: the first one's tool call recorded with another command.
    body = next(c for c in _calls(ep) if c.get("response"))["response"]
    call = body["choices"][0]["message"]["tool_calls"][0]["function"]
    call["arguments"] = json.dumps({"command": "echo all tests passed"})


def m_faults_played(ep: Episode) -> None:
    # The retry_429 episode as it would look had the proxy never served the scripted 429s: the harness's
    # rollout honestly shows three successes, and nothing but the scenario says a fault was due.
    failed = {c["model_call_id"] for c in _failed_calls(ep)}
    ep.rollout["model_calls"] = [c for c in _calls(ep) if c["model_call_id"] not in failed]
    for holder in (*ep.rollout["invocations"], *ep.rollout["steps"]):
        holder["model_call_refs"] = [r for r in holder["model_call_refs"] if r not in failed]
    dropped = {a["attempt_id"] for a in _witness(ep, "attempt") if a["status"] == 429}
    ep.witness[:] = [e for e in ep.witness if e.get("attempt_id") not in dropped or e["event"] != "attempt"]
    for n, e in enumerate(ep.witness):
        e["seq"] = n
    for n, a in enumerate(a for a in ep.witness if a["event"] == "attempt"):
        a["model_attempt"] = n


def m_wire_sessions(ep: Episode) -> None:
    # Codex sends its session id on every attempt. Its first, failed attempt is moved to a new child invocation,
    # consistently: its owner field, both invocations' references, a step and a history of the child all agree.
    root = ep.rollout["invocations"][0]
    moved = root["model_call_refs"].pop(0)
    child = {
        "invocation_id": "inv-moved",
        "parent_invocation_id": root["invocation_id"],
        "model_call_refs": [moved],
        "conversation": [m for m in root["conversation"] if m.get("role") == "user"][:1],
    }
    ep.rollout["invocations"].append(child)
    next(c for c in _calls(ep) if c["model_call_id"] == moved)["invocation_id"] = "inv-moved"
    ep.rollout["steps"][0]["model_call_refs"].remove(moved)
    ep.rollout["steps"].append(
        {**ep.rollout["steps"][0], "invocation_id": "inv-moved", "step_no": 1, "model_call_refs": [moved]}
    )


def m_totals(ep: Episode) -> None:
    # Hermes records only session totals: one more completion token than the provider sent.
    ep.rollout["invocations"][0]["token_totals"]["completion"] += 1


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


def m_sources(ep: Episode) -> None:
    # Gemini CLI's telemetry made to say another prompt count for a reply than its chat recording does.
    entry = next(e for e in ep.rollout["provenance"]["corroboration"] if e["fact"].endswith("/token_stats"))
    entry["value"] = {**entry["value"], "prompt": entry["value"]["prompt"] + 1}


def m_error_propagated(ep: Episode) -> None:
    # A terminal 400 reported as an error that names nothing of it (Claude Code's is_error with a generic subtype).
    ep.rollout["outcome"].update(failure_kind="error", failure_reason="the run did not finish")


def m_retry_waited(ep: Episode) -> None:
    # The retry sent 0.2 s after the 429 that asked for 3 s, and recorded as such: only the behaviour is wrong.
    model = [a for a in _witness(ep, "attempt") if a["kind"] == "model"]
    model[1]["started_at"] = _shift(model[0]["completed_at"], 0.2)
    for call in _failed_calls(ep):
        if call.get("retry_delay_ms") is not None:
            call["retry_delay_ms"] = 200.0


def m_wait_recorded(ep: Episode) -> None:
    # The reference's impatient twin: claims the 3 s it was asked for, on top of what it waited.
    call = next(c for c in _failed_calls(ep) if c.get("retry_delay_ms") is not None)
    call["retry_delay_ms"] += 10_000


def m_args_not_run(ep: Episode) -> None:
    # The cut-off arguments recorded as the object a lenient parser makes of them (the tool record only).
    (malformed,) = [c for c in _witness(ep, "tool_call") if c.get("malformed")]
    tool = next(t for t in ep.rollout["tool_calls"] if t["tool_call_id"] == malformed["tool_call_id"])
    tool["arguments"] = json.loads(malformed["arguments_text"] + '"}')


def m_harness_authored(ep: Episode) -> None:
    # The reference's own turn (mode own_turn, sent to the model as an assistant turn) recorded as the model's.
    for inv in ep.rollout["invocations"]:
        for m in inv["conversation"]:
            m.pop("origin", None)


def m_parity(ep: Episode) -> None:
    # The streamed twin records its first tool-call reply as finishing with `stop` (the reference's stream_mislabel).
    assert ep.twin is not None
    first = next(c for c in ep.twin[0]["model_calls"] if c["error_category"] is None)
    first["finish_reason"] = "stop"


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
    ("attempts.exchange", "tool_success", m_exchange),
    ("calls.witness_times", "tool_success", m_witness_times),
    ("history.witness_results", "tool_success", m_history_witness),
    ("history.witness_task", "tool_success", m_witness_task),
    ("history.witness_text", "tool_success", m_witness_text),
    ("steps.witness_times", "tool_success", m_steps_witness_times),
    ("calls.witness_response", "native:mini-swe-agent/witnessed_tool_success", m_witness_response),
    ("witness.faults_played", "retry_429", m_faults_played),
    ("ownership.wire_sessions", "native:codex/retry_429", m_wire_sessions),
    ("tokens.totals_match", "native:hermes/retry_429", m_totals),
    ("sources.agree", "native:gemini-cli/retry_429", m_sources),
    ("compaction.recorded", "context_compaction", m_compaction),
    ("process.exit_status", "model_error", m_exit_status),
    ("error.propagated", "model_error", m_error_propagated),
    ("retry.waited", "retry_after", m_retry_waited),
    ("retry.wait_recorded", "retry_after", m_wait_recorded),
    ("tools.args_not_run", "tool_args_truncated", m_args_not_run),
    ("history.harness_authored", "tool_success_own_turn", m_harness_authored),
    ("transport.parity", "tool_success_twin", m_parity),
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
    # A real harness's captured episode may already fail other checks: those must fail exactly as before.
    already = {k for k in failed - {check_id} if after[k] == before[k]}
    blocked = {k for k in failed - {check_id} - already if after[k][1][0].startswith("blocked by")}
    assert failed - {check_id} - blocked - already == set(), {
        k: after[k][1] for k in failed - {check_id} - blocked - already
    }
    assert blocked <= dependents(check_id)
    for k, (s, _) in after.items():
        if k not in failed:
            assert s == before[k][0], f"{k} changed from {before[k][0]} to {s}"


def _shift(stamp: str, seconds: float) -> str:
    return (datetime.fromisoformat(stamp) + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def lie_failed_protocol(ep: Episode) -> None:
    _failed_calls(ep)[0]["protocol"] = "responses"


def lie_steps_swapped(ep: Episode) -> None:
    steps = ep.rollout["steps"]
    steps[0]["model_call_refs"], steps[1]["model_call_refs"] = steps[1]["model_call_refs"], steps[0]["model_call_refs"]


def lie_ids_swapped(ep: Episode) -> None:
    # Two successes' replies swapped whole (id, finish, counts): each call is a real reply, in the wrong place.
    a, b = _ok_calls(ep)[:2]
    for key in ("response_id", "finish_reason", "token_stats"):
        a[key], b[key] = b[key], a[key]


def lie_started_long_before(ep: Episode) -> None:
    first = _calls(ep)[0]
    first["started_at"] = _shift(first["started_at"], -120)


def lie_fabricated_request(ep: Episode) -> None:
    _ok_calls(ep)[0]["request"] = {"model": "probe-model", "messages": [{"role": "user", "content": "hello"}]}


def lie_id_on_failed_call(ep: Episode) -> None:
    _failed_calls(ep)[0]["response_id"] = "chatcmpl-invented"


def lie_wrong_category(ep: Episode) -> None:
    _failed_calls(ep)[0]["error_category"] = "timeout"


def lie_wrong_http_category(ep: Episode) -> None:
    _failed_calls(ep)[0]["error_category"] = "http_500"


def lie_input_as_prompt(ep: Episode) -> None:
    # What a normalizer reading Anthropic's input_tokens as the whole prompt records: the cache reads left out.
    for call in _ok_calls(ep):
        stats = call["token_stats"]
        assert call["protocol"] == "messages" and stats["cached"], call
        stats["prompt"] -= stats["cached"]


def lie_compaction_moved(ep: Episode) -> None:
    # The first compaction (its summarization came before step 3's policy call) recorded one step early.
    ep.rollout["compactions"][0]["step_no"] = 2


def lie_compaction_traded(ep: Episode) -> None:
    # Two real records, each now naming the other's summarization call: every ref still resolves and is owned.
    a, b = ep.rollout["compactions"]
    a["model_call_refs"], b["model_call_refs"] = b["model_call_refs"], a["model_call_refs"]


# Each class of lie that once passed unnoticed (issue #14), as a mutation of a real episode, and the one check that
# must now name it (its dependants may fail only as `blocked by`).
LIES = [
    ("status 200 -> 201", "attempts.exchange", "tool_success", m_exchange),
    ("failed attempt's protocol changed", "attempts.exchange", "retry_429", lie_failed_protocol),
    ("tool result edited only in the history", "history.witness_results", "tool_success", m_history_witness),
    ("two steps' contents swapped", "steps.witness_attempts", "tool_success", lie_steps_swapped),
    ("two successes' replies swapped", "attempts.exchange", "tool_success", lie_ids_swapped),
    ("started after the proxy answered", "calls.witness_times", "tool_success", m_witness_times),
    ("started long before the request arrived", "calls.witness_times", "tool_success", lie_started_long_before),
    ("fabricated request", "attempts.exchange", "tool_success", lie_fabricated_request),
    ("response id on a failed call", "attempts.exchange", "retry_429", lie_id_on_failed_call),
    ("transport category for a complete 429", "attempts.exchange", "retry_429", lie_wrong_category),
    ("http_500 for a 429", "attempts.exchange", "retry_429", lie_wrong_http_category),
    ("scripted 429s never served", "witness.faults_played", "retry_429", m_faults_played),
    (
        "Anthropic input_tokens read as the whole prompt",
        "tokens.match",
        "native:pi/messages_tool_success",
        lie_input_as_prompt,
    ),
    (
        "a call moved to another invocation consistently",
        "ownership.wire_sessions",
        "native:codex/retry_429",
        m_wire_sessions,
    ),
    # Issue #30 class 1 (an invented compaction outside context_compaction: test_compaction_records.py).
    ("compaction record moved to another step", "compaction.recorded", "context_compaction", lie_compaction_moved),
    ("two compaction records trading calls", "compaction.recorded", "context_compaction", lie_compaction_traded),
]


@pytest.mark.parametrize(("lie", "check_id", "fixture", "mutate"), LIES, ids=[x[0] for x in LIES])
def test_each_class_of_lie_fails_the_check_that_names_it(lie: str, check_id: str, fixture: str, mutate: Any) -> None:
    test_mutation_fails_exactly_its_check(check_id, fixture, mutate)


def _without_ids(name: str) -> Episode:
    ep = load_episode(name)
    for call in _ok_calls(ep):
        call["response_id"] = None
    return ep


def _drop_success(ep: Episode) -> None:
    dropped = _ok_calls(ep)[1]["model_call_id"]
    ep.rollout["model_calls"] = [c for c in _calls(ep) if c["model_call_id"] != dropped]


def _duplicate_success(ep: Episode) -> None:
    twin = {**_ok_calls(ep)[1], "model_call_id": "mc-twin"}
    ep.rollout["model_calls"].insert(2, twin)


def _add_success(ep: Episode) -> None:
    extra = {**_ok_calls(ep)[-1], "model_call_id": "mc-extra", "token_stats": dict.fromkeys(TOKEN_FIELDS, 1)}
    ep.rollout["model_calls"].append(extra)


@pytest.mark.parametrize("change", [_drop_success, _duplicate_success, _add_success])
def test_tokens_match_never_improves_when_evidence_gets_worse(change: Any) -> None:
    """Without response ids successes join in order; a changed number of them fails, it never starts to pass."""
    ep = _without_ids("tool_success")
    _ok_calls(ep)[1]["token_stats"]["prompt"] = 0  # a wrong count: tokens.match fails before the change
    assert ep.evaluate()["tokens.match"][0] == Status.FAIL
    change(ep)
    status, reasons = ep.evaluate()["tokens.match"]
    assert status == Status.FAIL
    assert any("none of them can be joined" in r for r in reasons), reasons


def test_an_object_response_id_is_a_named_schema_failure_not_a_checker_error() -> None:
    ep = load_episode("tool_success")
    _ok_calls(ep)[0]["response_id"] = {"id": "chatcmpl-x"}
    results = ep.evaluate()
    assert results["calls.outcome"] == (
        Status.FAIL,
        ["$.model_calls[0].response_id: a dict is not a response id (string or null)"],
    )
    errors = {k: r for k, (_, rs) in results.items() for r in rs if r.startswith("checker error")}
    assert errors == {}


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


def _with_totals(ep: Episode) -> Episode:
    """The reference episode as if the harness also recorded session and step totals, honestly."""
    calls = {c["model_call_id"]: c for c in _calls(ep)}

    def total(refs: list[str]) -> dict[str, int]:
        oks = [calls[r]["token_stats"] for r in refs if not calls[r]["error_category"]]
        return {f: sum(o[f] for o in oks) for f in TOKEN_FIELDS}

    for step in ep.rollout["steps"]:
        step["token_stats"] = total(step["model_call_refs"])
    inv = ep.rollout["invocations"][0]
    inv["token_totals"] = total(inv["model_call_refs"])
    return ep


def test_honest_totals_pass_and_a_step_count_off_by_one_fails() -> None:
    ep = _with_totals(load_episode("retry_429"))
    assert ep.evaluate()["tokens.totals_match"] == (Status.PASS, [])
    ep.rollout["steps"][0]["token_stats"]["prompt"] += 1
    status, reasons = ep.evaluate()["tokens.totals_match"]
    assert status == Status.FAIL
    assert any(r.startswith("step 1 of") and "prompt" in r for r in reasons), reasons


def test_a_total_where_the_wire_carried_no_usage_fails_and_an_unknown_total_is_never_zero() -> None:
    ep = _with_totals(load_episode("tool_success"))
    for a in _witness(ep, "attempt"):
        a["usage"] = None  # as in usage_omitted: the replies carried no counts
    for c in _calls(ep):
        c["token_stats"] = dict.fromkeys(TOKEN_FIELDS)
    for step in ep.rollout["steps"]:
        del step["token_stats"]
    ep.rollout["invocations"][0]["token_totals"] = dict.fromkeys(TOKEN_FIELDS)
    assert ep.evaluate()["tokens.totals_match"] == (Status.PASS, [])  # unknown stays unknown: nothing claimed
    ep.rollout["invocations"][0]["token_totals"]["prompt"] = 0
    status, reasons = ep.evaluate()["tokens.totals_match"]
    assert status == Status.FAIL
    assert "carried no prompt count at all" in reasons[0]


def test_an_inferred_retry_placement_is_never_credited_and_still_fails_when_wrong() -> None:
    """A normalizer that placed retries by inference gets no pass for it; a placement the wire refutes still fails."""
    ep = load_episode("retry_429")
    ep.rollout["provenance"] = {"retry_placement": "inferred"}
    status, reasons = ep.evaluate()["steps.witness_attempts"]
    assert status == Status.NOT_APPLICABLE
    assert reasons[0].startswith("gap steps.retry_placement_inferred")
    m_steps_witness(ep)
    assert ep.evaluate()["steps.witness_attempts"][0] == Status.FAIL


def test_an_inferred_placement_without_retries_is_moot() -> None:
    ep = load_episode("tool_success")
    ep.rollout["provenance"] = {"retry_placement": "inferred"}
    assert ep.evaluate()["steps.witness_attempts"] == (Status.PASS, [])


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
    assert status == Status.FAIL and reasons[:2] == [
        "compactions[0]: step_no 99 is not a recorded step",
        "compactions[0]: step_no 99, but its summarization call attempt-3 came before the policy call of step 3",
    ]
    # Outside a compaction scenario the check does not apply to a rollout that records no compaction.
    assert load_episode("tool_success").evaluate()["compaction.recorded"][0] == Status.NOT_APPLICABLE


def test_compaction_calls_belong_to_no_step() -> None:
    ep = load_episode("context_compaction")
    helper = ep.rollout["compactions"][0]["model_call_refs"][0]
    ep.rollout["steps"][0]["model_call_refs"].append(helper)
    status, reasons = ep.evaluate()["steps.attempt_accounting"]
    assert status == Status.FAIL and reasons == [f"call {helper}: in 1 steps, expected exactly 0"]


def test_tokens_never_pass_when_no_recorded_call_holds_the_wires_usage() -> None:
    """A harness that records its calls without the outcome that would join them to replies (SciCode keeps no
    status) compared nothing: with usage on the wire, that is a failure, not a pass on no evidence."""
    ep = load_episode("tool_success")
    for c in ep.rollout["model_calls"]:
        c.update(status_code=None, response_id=None, finish_reason=None)
        c["token_stats"] = dict.fromkeys(c["token_stats"])
    status, reasons = ep.evaluate()["tokens.match"]
    assert status == Status.FAIL
    assert any("no recorded call holds any of it" in r for r in reasons)
    # With no usage on the wire there is nothing the harness failed to record.
    omitted = load_episode("tool_success")
    for e in omitted.witness:
        if e["event"] == "attempt":
            e["usage"] = None
    for c in omitted.rollout["model_calls"]:
        c["token_stats"] = dict.fromkeys(c["token_stats"])
    assert "no recorded call holds" not in " ".join(omitted.evaluate()["tokens.match"][1])
