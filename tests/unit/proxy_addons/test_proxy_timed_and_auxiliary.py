"""In-process hooks for timed faults (routing to the responder, witness on completion), resets and auxiliary routes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import (
    BASH_TOOL,
    MESSAGES_BASH_TOOL,
    RESPONSES_NAMESPACE_TOOL,
    MakeProvider,
    Provider,
    chat_body,
    execute_tool_calls,
    response_json,
    tool_success_scenario,
    wait_fsync_failed,
)
from mitmproxy import http
from mitmproxy.flow import Error

from proxy_addons.provider import PLAN_METADATA, WITNESS_FAILURE_EXIT
from proxy_addons.responder import ABORT_HEADER, LOOPBACK, PLAN_HEADER

USER = {"role": "user", "content": "Run the shell commands you are asked to run."}


def with_responder(provider: Provider) -> Provider:
    # The responder listens only under a running event loop; routing needs just its port.
    provider.addon.responder.port = 9
    return provider


def test_timed_fault_routes_the_flow_to_the_responder_with_an_empty_body(make_provider: MakeProvider) -> None:
    provider = with_responder(
        make_provider(faults=[{"attempt": 0, "kind": "http_error", "status": 504, "delay_seconds": 2}])
    )
    flow = provider.send(
        "POST",
        "/v1/chat/completions",
        json.dumps(chat_body([USER])).encode(),
        headers={"content-encoding": "identity"},
    )
    assert flow.response is None and flow.error is None
    token = flow.metadata[PLAN_METADATA]
    request = flow.request
    assert (request.scheme, request.host, request.port) == ("http", LOOPBACK, 9)
    assert request.headers[PLAN_HEADER] == token and request.raw_content == b""
    assert request.headers["content-length"] == "0" and "content-encoding" not in request.headers
    assert provider.events("attempt") == []  # witnessed when it ends
    plan = provider.addon.responder._plans[token]
    assert (plan.reply.status, plan.reply.delay_seconds) == (504, 2.0)
    assert json.loads(plan.reply.pieces[0])["error"]["code"] == "504"

    flow.response = http.Response.make(504, b"", {})
    provider.addon.responseheaders(flow)
    assert flow.response.stream is True  # mitmproxy forwards the pieces as they arrive


def test_replies_still_in_play_at_shutdown_are_witnessed_before_end(make_provider: MakeProvider) -> None:
    provider = with_responder(make_provider(faults=[{"attempt": 0, "kind": "withhold"}]))
    provider.chat(chat_body([USER], stream=True))
    provider.addon.done()
    events = provider.events()
    assert [e["event"] for e in events] == ["start", "attempt", "end"]
    attempt = events[1]
    assert (attempt["ended"], attempt["status"], attempt["fault"], attempt["model_attempt"]) == (
        "withheld",
        None,
        "withhold",
        0,
    )
    assert attempt["sse_events"] == [] and "client_disconnected_at" not in attempt


def test_withheld_attempt_ends_when_the_client_leaves_and_the_retry_gets_step_zero(make_provider: MakeProvider) -> None:
    provider = with_responder(make_provider(faults=[{"attempt": 0, "kind": "withhold"}]))
    withheld = provider.chat(chat_body([USER]))
    plan = provider.addon.responder._plans[withheld.metadata[PLAN_METADATA]]
    assert (plan.reply.send_head, plan.reply.hold_seconds) == (False, 600.0)
    retried = provider.chat(chat_body([USER]))  # the harness gave up and retried before we noticed
    assert response_json(retried)["choices"][0]["finish_reason"] == "tool_calls"
    provider.addon.responder.fail(withheld.metadata[PLAN_METADATA], client_left=True)
    first, second = provider.events("attempt")
    assert (first["attempt_id"], first["model_attempt"], second["attempt_id"], second["model_attempt"]) == (
        "attempt-1",
        1,
        "attempt-0",
        0,
    )
    assert second["ended"] == "withheld" and second["client_disconnected_at"] == second["completed_at"]


def test_cut_reply_witnesses_its_calls_but_issues_none(make_provider: MakeProvider) -> None:
    provider = with_responder(make_provider(faults=[{"attempt": 0, "kind": "cut", "after_events": 3}]))
    cut = provider.chat(chat_body([USER], stream=True, stream_options={"include_usage": True}))
    plan = provider.addon.responder._plans[cut.metadata[PLAN_METADATA]]
    assert plan.reply.send_pieces == 3 and plan.reply.chunked and plan.reply.ending == "cut"
    (cut_call,) = provider.events("tool_call")
    plan.pieces_sent, plan.status_sent = 3, 200
    provider.addon.responder._finish(plan, "cut")
    (attempt,) = provider.events("attempt")
    assert (attempt["ended"], attempt["step"], attempt["reply_kind"]) == ("cut", 0, "tool_calls")
    assert attempt["tool_call_ids"] == [cut_call["tool_call_id"]] and len(attempt["sse_events"]) == 3
    assert attempt["finish_reason"] is None and attempt["usage"] is None

    # The retry needs no result for the cut call, and gets step 0 again with a fresh id.
    retried = response_json(provider.chat(chat_body([USER])))
    (call,) = retried["choices"][0]["message"]["tool_calls"]
    assert call["id"] != cut_call["tool_call_id"]
    history = execute_tool_calls(provider, retried)
    assert response_json(provider.chat(chat_body([USER, *history])))["choices"][0]["finish_reason"] == "tool_calls"
    assert [a["step"] for a in provider.events("attempt")] == [0, 0, 1]


def test_cut_json_reply_is_split_in_halves(make_provider: MakeProvider) -> None:
    provider = with_responder(make_provider(faults=[{"attempt": 0, "kind": "cut"}]))
    flow = provider.chat(chat_body([USER]))
    plan = provider.addon.responder._plans[flow.metadata[PLAN_METADATA]]
    first, second = plan.reply.pieces
    assert plan.reply.send_pieces == 1 and not plan.reply.chunked
    assert json.loads(first + second)["choices"][0]["finish_reason"] == "tool_calls"
    assert abs(len(first) - len(second)) <= 1


def test_abort_head_kills_the_flow_and_errors_finish_unreached_plans(make_provider: MakeProvider) -> None:
    provider = with_responder(make_provider(faults=[{"attempt": 0, "kind": "withhold", "repeat": True}]))
    flow = provider.chat(chat_body([USER]))
    flow.response = http.Response.make(502, b"", {ABORT_HEADER: "1"})
    provider.addon.responseheaders(flow)
    assert flow.error is not None and flow.error.msg == "Connection killed."
    unreached = provider.chat(chat_body([USER]))
    unreached.error = Error("Connection refused")
    provider.addon.error(unreached)
    (attempt,) = provider.events("attempt")
    assert (attempt["attempt_id"], attempt["ended"], attempt["status"]) == ("attempt-1", "reset", None)
    # Killed: the client's connection closes with no reply, as witnessed, not with a 502 page of mitmproxy's own.
    assert unreached.error is not None and unreached.error.msg == "Connection killed."
    left = provider.chat(chat_body([USER]))
    left.error = Error("Client disconnected.")
    provider.addon.error(left)
    assert left.error.msg == "Client disconnected."  # a client that left is not killed again


def test_without_a_responder_a_timed_reply_becomes_a_witnessed_reset(make_provider: MakeProvider) -> None:
    provider = make_provider(faults=[{"attempt": 0, "kind": "cut"}])
    flow = provider.chat(chat_body([USER]))
    assert flow.response is None and flow.error is not None
    (attempt,) = provider.events("attempt")
    assert (attempt["ended"], attempt["fault"]) == ("reset", "cut")


def test_reset_fault_kills_the_connection_and_is_witnessed(make_provider: MakeProvider) -> None:
    provider = make_provider(faults=[{"attempt": 0, "kind": "reset"}])
    flow = provider.chat(chat_body([USER], stream=True))
    assert flow.response is None and flow.error is not None and flow.error.msg == "Connection killed."
    assert response_json(provider.chat(chat_body([USER])))["choices"][0]["finish_reason"] == "tool_calls"
    first, second = provider.events("attempt")
    assert (first["ended"], first["status"], first["response"], first["model_attempt"]) == ("reset", None, None, 0)
    assert (second["ended"], second["step"], second["model_attempt"]) == ("complete", 0, 1)


# -- auxiliary routes ------------------------------------------------------------------------------------


def test_anthropic_model_routes_answer_in_the_anthropic_shape(make_provider: MakeProvider) -> None:
    provider = make_provider()
    headers = {"anthropic-version": "2023-06-01"}
    listing = response_json(provider.send("GET", "/v1/models?limit=20", headers=headers))
    entry = {"type": "model", "id": "probe-model", "display_name": "probe-model", "created_at": "2025-01-01T00:00:00Z"}
    assert listing == {"data": [entry], "has_more": False, "first_id": "probe-model", "last_id": "probe-model"}
    assert response_json(provider.send("GET", "/v1/models/probe-model", headers=headers)) == entry
    missing = provider.send("GET", "/v1/models/other", headers=headers)
    assert missing.response is not None and missing.response.status_code == 404
    assert response_json(missing)["type"] == "error" and response_json(missing)["error"]["type"] == "not_found_error"
    assert [a["kind"] for a in provider.events("attempt")] == ["auxiliary"] * 3


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/api/v1/models", 404),
        ("POST", "/api/show", 404),
        ("GET", "/api/v1/models/x/endpoints", 404),
        ("GET", "/v1/props", 404),
        ("GET", "/props", 404),
        ("GET", "/version", 404),
    ],
)
def test_other_dialects_metadata_probes_are_auxiliary_404s(
    make_provider: MakeProvider, method: str, path: str, status: int
) -> None:
    provider = make_provider()
    flow = provider.send(method, path, {"model": "probe-model"} if method == "POST" else None)
    assert flow.response is not None and flow.response.status_code == status
    (attempt,) = provider.events("attempt")
    assert (attempt["kind"], attempt["status"], attempt["protocol"]) == ("auxiliary", status, None)
    assert provider.events("violation") == []


def test_messages_token_count_is_auxiliary(make_provider: MakeProvider) -> None:
    provider = make_provider()
    flow = provider.send("POST", "/v1/messages/count_tokens?beta=true", {"model": "probe-model", "messages": [USER]})
    assert flow.response is not None and flow.response.status_code == 200
    assert response_json(flow)["input_tokens"] > 0
    assert provider.events("attempt")[0]["kind"] == "auxiliary"


def test_tool_less_request_before_the_script_started_is_not_auxiliary(make_provider: MakeProvider) -> None:
    provider = make_provider()
    flow = provider.chat(chat_body([USER], tools=[]))
    assert flow.response is not None and flow.response.status_code == 400
    assert provider.events("violation")[0]["code"] == "no_shell_tool"


def test_tool_less_harness_still_plays_a_final_answer_script(make_provider: MakeProvider) -> None:
    scenario = tool_success_scenario()
    scenario["script"] = [{"final_answer": "PROBE_DONE"}]
    provider = make_provider(scenario)
    reply = response_json(provider.chat(chat_body([USER], tools=[])))
    assert reply["choices"][0]["message"]["content"] == "PROBE_DONE"
    assert provider.events("attempt")[0]["kind"] == "model"


def test_side_request_after_the_final_answer_is_auxiliary_not_a_violation(make_provider: MakeProvider) -> None:
    scenario = tool_success_scenario()
    scenario["script"] = [{"tool_calls": [{}]}, {"final_answer": "PROBE_DONE"}]
    provider = make_provider(scenario)
    first = response_json(provider.chat(chat_body([USER])))
    history = execute_tool_calls(provider, first)
    provider.chat(chat_body([USER, *history]))
    summary = response_json(provider.chat(chat_body([USER, *history], tools=[])))
    assert summary["choices"][0]["message"]["content"] == "Probe session"
    assert [a["kind"] for a in provider.events("attempt")] == ["model", "model", "auxiliary"]
    provider.addon.done()
    assert provider.events("end")[0]["finished"] is True


# -- Responses and Messages specifics --------------------------------------------------------------------


def test_responses_namespaced_shell_tool_is_called_with_its_namespace(make_provider: MakeProvider) -> None:
    provider = make_provider()
    body: dict[str, Any] = {"model": "probe-model", "input": "Run it.", "tools": [RESPONSES_NAMESPACE_TOOL]}
    reply = response_json(provider.responses(body))
    (item,) = reply["output"]
    assert (item["type"], item["name"], item["namespace"]) == ("function_call", "exec_command", "functions")
    assert item["call_id"].startswith("call_") and item["id"].startswith("fc_")
    assert list(json.loads(item["arguments"])) == ["cmd"]
    assert reply["id"].startswith("resp_") and reply["status"] == "completed"
    assert provider.events("tool_call")[0]["namespace"] == "functions"


def test_messages_guard_errors_use_the_anthropic_error_shape(make_provider: MakeProvider) -> None:
    provider = make_provider()
    body: dict[str, Any] = {
        "model": "probe-model",
        "max_tokens": 100,
        "messages": [USER],
        "tools": [MESSAGES_BASH_TOOL],
    }
    first = response_json(provider.messages(body))
    assert first["stop_reason"] == "tool_use" and first["id"].startswith("msg_")
    (block,) = first["content"]
    assert block["type"] == "tool_use" and block["id"].startswith("toolu_") and list(block["input"]) == ["command"]
    refused = provider.messages(body)  # no tool_result for the issued call
    assert refused.response is not None and refused.response.status_code == 409
    assert response_json(refused) == {
        "type": "error",
        "error": {"type": "probe_protocol_error", "message": provider.events("violation")[0]["detail"]},
    }


def test_chat_tools_in_a_messages_request_are_no_shell_tool(make_provider: MakeProvider) -> None:
    provider = make_provider()
    body = {"model": "probe-model", "max_tokens": 100, "messages": [USER], "tools": [BASH_TOOL]}
    flow = provider.messages(body)
    assert flow.response is not None and flow.response.status_code == 400
    assert provider.events("violation")[0]["code"] == "no_shell_tool"


def test_failing_to_witness_a_timed_reply_stops_the_provider(
    make_provider: MakeProvider, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    provider = with_responder(make_provider(faults=[{"attempt": 0, "kind": "withhold"}]))
    flow = provider.chat(chat_body([USER]))
    good = provider.witness.read_text()

    def failing_fsync(fd: int) -> None:
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr("proxy_addons.witness.os.fsync", failing_fsync)
        provider.addon.responder.fail(flow.metadata[PLAN_METADATA], client_left=True)
        wait_fsync_failed(provider)  # the fsync runs behind the write, on the witness's writer thread
    assert provider.chat(chat_body([USER])).response is None  # nothing is served past a failed fsync
    assert "FATAL" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        provider.addon.done()
    assert exited.value.code == WITNESS_FAILURE_EXIT
    provider.witness.write_text(good)  # keep teardown's format check meaningful
