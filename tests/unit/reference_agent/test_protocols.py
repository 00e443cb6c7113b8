"""The Responses and Messages protocols, JSON and streamed, against the scripted in-process provider."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from probe_reference.tools import BASH_PARAMETERS

from tests.unit.reference_agent.fake_provider import (
    Reply,
    completion,
    json_reply,
    message_events,
    message_object,
    messages_usage,
    response_events,
    response_object,
    responses_usage,
    serve,
    sse_reply,
)
from tests.unit.reference_agent.helpers import NULL_TOKENS, run_agent

COMMAND = {"command": "printf hi; exit 3"}
RESPONSES_TOOL = ("call_1", "bash", json.dumps(COMMAND))
MESSAGES_TOOL = ("toolu_1", "bash", COMMAND)
RATE_LIMITED = {"error": {"message": "slow down", "type": "rate_limit_error", "code": "rate_limited"}}
ANTHROPIC_RATE_LIMITED = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
FAST_RETRY = {"retry-after-ms": "1"}
STREAM = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])


def responses(response: dict[str, Any], stream: bool) -> Reply:
    return sse_reply(response_events(response), done=False, named=True) if stream else json_reply(200, response)


def messages(message: dict[str, Any], stream: bool) -> Reply:
    return sse_reply(message_events(message), done=False, named=True) if stream else json_reply(200, message)


def flags(stream: bool) -> list[str]:
    return ["--stream"] if stream else []


def expected_tool_record(rollout: dict[str, Any], tool_call_id: str) -> dict[str, Any]:
    return {
        "tool_call_id": tool_call_id,
        "tool_name": "bash",
        "arguments": COMMAND,
        "status": "failed",
        "exit_code": 3,
        "output": "hi",
        "invocation_id": rollout["invocations"][0]["invocation_id"],
        "step_no": 1,
    }


# --- Responses ---------------------------------------------------------------------------------------


@STREAM
def test_responses_tool_call_then_final_answer(tmp_path: Path, stream: bool) -> None:
    script = [
        responses(
            response_object("resp_1", tool_calls=[RESPONSES_TOOL], usage=responses_usage(11, 5, reasoning=2, cached=0)),
            stream,
        ),
        responses(response_object("resp_2", content="The command printed hi.", usage=responses_usage(23, 7)), stream),
    ]
    with serve(script) as provider:
        code, rollout = run_agent(provider.url, tmp_path, "--protocol", "responses", *flags(stream))
    assert code == 0 and not provider.violations and provider.remaining == 0
    first, second = provider.received
    assert first.path == second.path == "/v1/responses"
    assert first.headers["authorization"] == "Bearer sk-test"
    assert first.body.get("stream", False) is stream
    (tool,) = first.body["tools"]
    assert tool["type"] == "function" and tool["name"] == "bash" and tool["parameters"] == BASH_PARAMETERS
    assert [item["role"] for item in first.body["input"]] == ["system", "user"]
    assert first.body["input"][1]["content"] == "say hi"
    # The whole history goes back, the call as the model made it and its real output keyed by call_id.
    assert second.body["input"][:2] == first.body["input"]
    assert second.body["input"][2:] == [
        {"type": "function_call", "call_id": "call_1", "name": "bash", "arguments": json.dumps(COMMAND)},
        {"type": "function_call_output", "call_id": "call_1", "output": "hi"},
    ]

    calls = rollout["model_calls"]
    assert [(c["protocol"], c["status_code"], c["response_id"], c["finish_reason"]) for c in calls] == [
        ("responses", 200, "resp_1", "completed"),
        ("responses", 200, "resp_2", "completed"),
    ]
    assert calls[0]["token_stats"] == {"prompt": 11, "completion": 5, "reasoning": 2, "total": 16, "cached": 0}
    assert calls[1]["token_stats"] == {"prompt": 23, "completion": 7, "reasoning": None, "total": 30, "cached": None}
    assert [s["model_call_refs"] for s in rollout["steps"]] == [["mc-1"], ["mc-2"]]
    assert rollout["tool_calls"] == [expected_tool_record(rollout, "call_1")]
    conversation = rollout["invocations"][0]["conversation"]
    assert [m["role"] for m in conversation] == ["system", "user", "assistant", "tool", "assistant"]
    assert conversation[2]["tool_calls"] == [{"tool_call_id": "call_1", "tool_name": "bash", "arguments": COMMAND}]
    assert conversation[3] == {"role": "tool", "tool_call_id": "call_1", "content": "hi"}
    assert conversation[4] == {"role": "assistant", "content": "The command printed hi."}
    assert rollout["outcome"] == {
        "final_answer": "The command printed hi.",
        "status": "completed",
        "failure_kind": None,
        "failure_reason": None,
    }


@STREAM
def test_responses_429_then_success(tmp_path: Path, stream: bool) -> None:
    script = [
        json_reply(429, RATE_LIMITED, FAST_RETRY),
        responses(response_object("resp_ok", content="done", usage=responses_usage(3, 1)), stream),
    ]
    with serve(script) as provider:
        code, rollout = run_agent(provider.url, tmp_path, "--protocol", "responses", *flags(stream))
    assert code == 0 and len(provider.received) == 2
    first, second = rollout["model_calls"]
    assert (first["status_code"], first["error_category"], first["error"]) == (429, "http_429", RATE_LIMITED)
    assert first["response_id"] is None and first["token_stats"] == NULL_TOKENS
    assert (second["status_code"], second["response_id"]) == (200, "resp_ok")
    assert [s["model_call_refs"] for s in rollout["steps"]] == [["mc-1", "mc-2"]]
    assert rollout["outcome"]["final_answer"] == "done"


@STREAM
def test_responses_usage_absent_stays_null(tmp_path: Path, stream: bool) -> None:
    partial = {"input_tokens": 5, "output_tokens": 2}  # no total, no details
    script = [
        responses(response_object("resp_a", tool_calls=[RESPONSES_TOOL]), stream),
        responses(response_object("resp_b", content="ok", usage=partial), stream),
    ]
    with serve(script) as provider:
        code, rollout = run_agent(provider.url, tmp_path, "--protocol", "responses", *flags(stream))
    assert code == 0
    first, second = rollout["model_calls"]
    assert first["token_stats"] == NULL_TOKENS
    assert second["token_stats"] == {"prompt": 5, "completion": 2, "reasoning": None, "total": None, "cached": None}


def test_responses_incomplete_is_a_reply_cut_at_the_token_limit(tmp_path: Path) -> None:
    """A reply that stopped at the token limit is kept as the success it was, and the run ends saying it was cut:
    never as a completed answer (error.propagated)."""
    response = response_object("resp_i", content="cut sh", usage=responses_usage(4, 2), status="incomplete")
    with serve([responses(response, True)]) as provider:
        code, rollout = run_agent(provider.url, tmp_path, "--protocol", "responses", "--stream")
    assert code == 1
    (call,) = rollout["model_calls"]
    assert (call["response_id"], call["finish_reason"], call["error_category"]) == ("resp_i", "incomplete", None)
    assert rollout["outcome"]["status"] == "error" and rollout["outcome"]["final_answer"] is None
    assert rollout["outcome"]["failure_kind"] == "truncated" and "incomplete" in rollout["outcome"]["failure_reason"]


def _then_done(stream: bool) -> Reply:
    return responses(response_object("resp_ok", content="done"), stream)


@pytest.mark.parametrize("terminal", ["error", "response.failed"])
def test_responses_stream_error_keeps_payload_and_is_asked_again(tmp_path: Path, terminal: str) -> None:
    error = {"code": "server_error", "message": "overloaded"}
    events = response_events(response_object("resp_e", content="x"), terminal=None)
    if terminal == "error":
        events.append({"type": "error", **error, "param": None, "sequence_number": 99})
        payload: dict[str, Any] = {**error, "param": None, "sequence_number": 99, "type": "error"}
    else:
        failed = {**response_object("resp_e"), "status": "failed", "error": error}
        events.append({"type": "response.failed", "response": failed, "sequence_number": 99})
        payload = error
    with serve([sse_reply(events, done=False, named=True), _then_done(True)]) as provider:
        code, rollout = run_agent(provider.url, tmp_path, "--protocol", "responses", "--stream")
    assert code == 0 and len(provider.received) == 2 and not provider.violations
    failed_call, ok = rollout["model_calls"]
    assert (failed_call["status_code"], failed_call["error_category"], failed_call["error"]) == (
        200,
        "stream_error",
        payload,
    )
    assert failed_call["retry_delay_ms"] == 500.0 and ok["response_id"] == "resp_ok"
    assert [s["model_call_refs"] for s in rollout["steps"]] == [["mc-1", "mc-2"]]
    assert rollout["outcome"]["final_answer"] == "done"


def test_responses_failed_json_response_is_a_failed_attempt(tmp_path: Path) -> None:
    error = {"code": "server_error", "message": "the model failed"}
    failed = {**response_object("resp_f"), "status": "failed", "error": error}
    with serve([json_reply(200, failed)] * 3) as provider:
        code, rollout = run_agent(provider.url, tmp_path, "--protocol", "responses")
    assert code == 1 and len(provider.received) == 3  # asked twice more, then given up
    call = rollout["model_calls"][0]
    assert (call["status_code"], call["error_category"], call["error"]) == (200, "response_failed", error)
    assert call["response_id"] is None and call["finish_reason"] is None
    assert rollout["outcome"]["failure_reason"] == "the model failed"


def test_responses_stream_without_completed_is_invalid(tmp_path: Path) -> None:
    events = response_events(response_object("resp_n", content="x"), terminal=None)
    with serve([sse_reply(events, done=False, named=True), _then_done(True)]) as provider:
        code, rollout = run_agent(provider.url, tmp_path, "--protocol", "responses", "--stream")
    assert code == 0
    call = rollout["model_calls"][0]
    assert (call["error_category"], call["response_id"]) == ("invalid_response", None)
    assert call["error"] == "the stream ended without response.completed"


# --- Messages ----------------------------------------------------------------------------------------


@STREAM
def test_messages_tool_call_then_final_answer(tmp_path: Path, stream: bool) -> None:
    script = [
        messages(message_object("msg_1", tool_calls=[MESSAGES_TOOL], usage=messages_usage(8, 5, cache_read=3)), stream),
        messages(
            message_object("msg_2", content="The command printed hi.", usage=messages_usage(20, 7, cache_creation=3)),
            stream,
        ),
    ]
    with serve(script) as provider:
        code, rollout = run_agent(provider.root, tmp_path, "--protocol", "messages", *flags(stream))
    assert code == 0 and not provider.violations and provider.remaining == 0
    first, second = provider.received
    assert first.path == second.path == "/v1/messages"
    assert first.headers["x-api-key"] == "sk-test" and "authorization" not in first.headers
    assert first.body.get("stream", False) is stream
    assert first.body["tools"] == [
        {"name": "bash", "description": first.body["tools"][0]["description"], "input_schema": BASH_PARAMETERS}
    ]
    assert first.body["system"].startswith("You are a careful assistant")
    assert first.body["messages"] == [{"role": "user", "content": "say hi"}]
    assert second.body["messages"][1:] == [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "bash", "input": COMMAND}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "hi"}]},
    ]

    calls = rollout["model_calls"]
    assert [(c["protocol"], c["status_code"], c["response_id"], c["finish_reason"]) for c in calls] == [
        ("messages", 200, "msg_1", "tool_use"),
        ("messages", 200, "msg_2", "end_turn"),
    ]
    # Our convention: prompt = input + cache reads + cache writes, cached = the reads alone.
    assert calls[0]["token_stats"] == {"prompt": 11, "completion": 5, "reasoning": None, "total": 16, "cached": 3}
    assert calls[1]["token_stats"] == {"prompt": 23, "completion": 7, "reasoning": None, "total": 30, "cached": 0}
    assert rollout["tool_calls"] == [expected_tool_record(rollout, "toolu_1")]
    conversation = rollout["invocations"][0]["conversation"]
    assert [m["role"] for m in conversation] == ["system", "user", "assistant", "tool", "assistant"]
    assert conversation[2]["tool_calls"] == [{"tool_call_id": "toolu_1", "tool_name": "bash", "arguments": COMMAND}]
    assert conversation[3] == {"role": "tool", "tool_call_id": "toolu_1", "content": "hi"}
    assert rollout["outcome"]["final_answer"] == "The command printed hi."


def test_messages_two_tool_calls_answer_in_one_user_turn(tmp_path: Path) -> None:
    two = [("toolu_a", "bash", {"command": "printf a"}), ("toolu_b", "bash", {"command": "printf b"})]
    script = [
        messages(message_object("msg_1", content="Running both.", tool_calls=two), False),
        messages(message_object("msg_2", content="ab"), False),
    ]
    with serve(script) as provider:
        code, rollout = run_agent(provider.root, tmp_path, "--protocol", "messages")
    assert code == 0
    assistant, results = provider.received[1].body["messages"][1:]
    assert [b["type"] for b in assistant["content"]] == ["text", "tool_use", "tool_use"]
    assert results == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_a", "content": "a"},
            {"type": "tool_result", "tool_use_id": "toolu_b", "content": "b"},
        ],
    }
    assert [t["output"] for t in rollout["tool_calls"]] == ["a", "b"]


@STREAM
def test_messages_429_then_success(tmp_path: Path, stream: bool) -> None:
    script = [
        json_reply(429, ANTHROPIC_RATE_LIMITED, FAST_RETRY),
        messages(message_object("msg_ok", content="done", usage=messages_usage(3, 1)), stream),
    ]
    with serve(script) as provider:
        code, rollout = run_agent(provider.root, tmp_path, "--protocol", "messages", *flags(stream))
    assert code == 0 and len(provider.received) == 2
    first, second = rollout["model_calls"]
    assert (first["status_code"], first["error_category"], first["error"]) == (429, "http_429", ANTHROPIC_RATE_LIMITED)
    assert first["response_id"] is None and first["token_stats"] == NULL_TOKENS
    assert (second["status_code"], second["response_id"], second["finish_reason"]) == (200, "msg_ok", "end_turn")
    assert [s["model_call_refs"] for s in rollout["steps"]] == [["mc-1", "mc-2"]]
    assert rollout["outcome"]["final_answer"] == "done"


@STREAM
def test_messages_usage_absent_stays_null(tmp_path: Path, stream: bool) -> None:
    only_output = {"output_tokens": 2}  # input count missing: the total is unknown too
    script = [
        messages(message_object("msg_a", tool_calls=[MESSAGES_TOOL]), stream),
        messages(message_object("msg_b", content="ok", usage=only_output), stream),
    ]
    with serve(script) as provider:
        code, rollout = run_agent(provider.root, tmp_path, "--protocol", "messages", *flags(stream))
    assert code == 0
    first, second = rollout["model_calls"]
    assert first["token_stats"] == NULL_TOKENS
    # Streamed, message_delta's final output count (2) replaces the provisional 1 of message_start.
    assert second["token_stats"] == {"prompt": None, "completion": 2, "reasoning": None, "total": None, "cached": None}


def test_messages_stream_error_event_keeps_payload_and_is_asked_again(tmp_path: Path) -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    events = message_events(message_object("msg_e", content="partial"))[:3]
    events.append(error)
    done = messages(message_object("msg_ok", content="done"), True)
    with serve([sse_reply(events, done=False, named=True), done]) as provider:
        code, rollout = run_agent(provider.root, tmp_path, "--protocol", "messages", "--stream")
    assert code == 0 and len(provider.received) == 2
    failed_call, ok = rollout["model_calls"]
    assert (failed_call["status_code"], failed_call["error_category"], failed_call["error"]) == (
        200,
        "stream_error",
        error,
    )
    assert ok["response_id"] == "msg_ok" and rollout["outcome"]["final_answer"] == "done"


def test_messages_error_event_every_time_ends_the_run_with_its_words(tmp_path: Path) -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    events = [*message_events(message_object("msg_e", content="partial"))[:3], error]
    with serve([sse_reply(events, done=False, named=True)] * 3) as provider:
        code, rollout = run_agent(provider.root, tmp_path, "--protocol", "messages", "--stream")
    assert code == 1 and len(provider.received) == 3
    assert rollout["outcome"]["failure_kind"] == "model_error"
    assert rollout["outcome"]["failure_reason"] == "Overloaded"


def test_messages_terminal_400_keeps_body(tmp_path: Path) -> None:
    body = {"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long"}}
    with serve([json_reply(400, body)]) as provider:
        code, rollout = run_agent(provider.root, tmp_path, "--protocol", "messages")
    assert code == 1 and len(provider.received) == 1
    (call,) = rollout["model_calls"]
    assert (call["status_code"], call["error_category"], call["error"]) == (400, "http_400", body)
    assert "prompt is too long" in rollout["outcome"]["failure_reason"]


def test_messages_without_key_fails_before_sending(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from probe_reference.cli import main

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    rollout_path = tmp_path / "rollout.json"
    code = main(
        ["--task", "t", "--protocol", "messages", "--base-url", "http://127.0.0.1:9", "--rollout", str(rollout_path)]
    )
    assert code == 1
    rollout = json.loads(rollout_path.read_text())
    assert rollout["model_calls"] == [] and rollout["outcome"]["failure_kind"] == "config_error"


def test_messages_env_base_url_and_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from probe_reference.cli import main

    with serve([messages(message_object("msg_env", content="ok"), False)]) as provider:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", provider.root)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
        monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # must not be used for messages
        code = main(["--task", "t", "--protocol", "messages", "--rollout", str(tmp_path / "rollout.json")])
    assert code == 0
    assert provider.received[0].headers["x-api-key"] == "sk-ant-env"


# --- Both SDKs: the per-request timeout ---------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["chat", "responses", "messages"])
def test_timeout_then_retry_is_recorded(tmp_path: Path, protocol: str) -> None:
    """No status line before the timeout: the SDK's own retry asks again."""
    late: dict[str, Any]
    if protocol == "messages":
        late, ok = message_object("msg_late", content="late"), message_object("msg_t", content="ok")
    elif protocol == "responses":
        late, ok = response_object("resp_late", content="late"), response_object("resp_t", content="ok")
    else:
        late, ok = (
            json.loads(completion("c-late", content="late").body),
            json.loads(completion("c-t", content="ok").body),
        )
    slow = Reply(status=200, body=json.dumps(late).encode(), delay_s=10)
    with serve([slow, json_reply(200, ok)]) as provider:
        base = provider.root if protocol == "messages" else provider.url
        code, rollout = run_agent(base, tmp_path, "--protocol", protocol, "--timeout", "0.3")
    assert code == 0 and len(provider.received) == 2
    first, second = rollout["model_calls"]
    assert (first["status_code"], first["error_category"], first["protocol"]) == (None, "timeout", protocol)
    assert second["response_id"] == ok["id"]
    assert [s["model_call_refs"] for s in rollout["steps"]] == [["mc-1", "mc-2"]]


@pytest.mark.parametrize("protocol", ["responses", "messages"])
def test_silent_stream_times_out_and_the_agent_asks_again(tmp_path: Path, protocol: str) -> None:
    """Status line, then silence (harness_deadline, streamed): the SDK does not retry that, the agent does."""
    if protocol == "messages":
        late, ok = messages(message_object("msg_late", content="late"), True), message_object("msg_t", content="ok")
        answer = messages(ok, True)
    else:
        late, ok = (
            responses(response_object("resp_late", content="late"), True),
            response_object("resp_t", content="ok"),
        )
        answer = responses(ok, True)
    silent = Reply(status=200, body=late.body, content_type=late.content_type, withhold_body_s=10)
    with serve([silent, answer]) as provider:
        base = provider.root if protocol == "messages" else provider.url
        code, rollout = run_agent(base, tmp_path, "--protocol", protocol, "--stream", "--timeout", "0.3")
    assert code == 0 and len(provider.received) == 2
    assert provider.received[0].body == provider.received[1].body
    first, second = rollout["model_calls"]
    assert (first["status_code"], first["error_category"], first["response_id"]) == (200, "timeout", None)
    assert second["response_id"] == ok["id"]
    assert [s["model_call_refs"] for s in rollout["steps"]] == [["mc-1", "mc-2"]]
    assert rollout["outcome"]["final_answer"] == "ok"
