"""Responses and Messages codecs on their own: request parsing, reply objects, event sequences."""

from __future__ import annotations

import json
from typing import Any

import pytest

from proxy_addons.gemini import parse_gemini_request
from proxy_addons.messages import MessagesCodec, message_events, parse_messages_request
from proxy_addons.protocol import IssuedToolCall, ModelRequest, RequestShapeError, ScriptedReply, Usage
from proxy_addons.responses import ResponsesCodec, parse_responses_request, response_events

USAGE = Usage(prompt=100, completion=7, reasoning=2, cached=3)
STREAM = ModelRequest(stream=True, stream_usage=True, tools=(), tool_results=())
JSON_REQUEST = ModelRequest(stream=False, stream_usage=True, tools=(), tool_results=())


def calls(count: int, namespace: str | None = None) -> tuple[IssuedToolCall, ...]:
    return tuple(
        IssuedToolCall(
            call_id=f"call_{n}",
            name="exec_command",
            arguments={"cmd": f"echo {n}"},
            command=f"echo {n}",
            marker_path=f"/probe/markers/call_{n}.txt",
            token=f"probe_{n}",
            exit_code=0,
            expected_output=f"probe_{n}\n",
            namespace=namespace,
        )
        for n in range(count)
    )


def payloads(body: bytes) -> list[tuple[str, dict[str, Any]]]:
    """(event name, data) of every SSE event; each event has exactly one `event:` and one `data:` line."""
    out = []
    for block in body.decode().split("\n\n"):
        if not block:
            continue
        event_line, data_line = block.split("\n")
        assert event_line.startswith("event: ") and data_line.startswith("data: ")
        data = json.loads(data_line[len("data: ") :])
        assert data["type"] == event_line[len("event: ") :]
        out.append((data["type"], data))
    return out


# -- Responses ---------------------------------------------------------------------------------------------


def test_responses_request_flattens_namespaces_and_reads_outputs() -> None:
    request = parse_responses_request(
        {
            "stream": True,
            "input": [
                {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
                {"type": "function_call", "call_id": "c1", "name": "exec_command", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "plain"},
                {"type": "function_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": "parts"}]},
            ],
            "tools": [
                {"type": "web_search"},
                {"type": "custom", "name": "apply_patch", "format": {"type": "grammar"}},
                {"type": "function", "function": {"name": "chat_style", "parameters": {"type": "object"}}},
                {"type": "namespace", "name": "functions", "tools": [{"type": "function", "name": "exec_command"}]},
            ],
        }
    )
    assert request.stream and request.stream_usage and request.has_tools
    assert [(t.name, t.namespace) for t in request.tools] == [("chat_style", None), ("exec_command", "functions")]
    assert request.latest_results() == {"c1": "plain", "c2": "parts"}


@pytest.mark.parametrize("body", [{"input": 3}, {"input": [], "tools": {"a": 1}}])
def test_responses_request_shape_errors(body: dict[str, Any]) -> None:
    with pytest.raises(RequestShapeError):
        parse_responses_request(body)


def test_responses_string_input_without_tools() -> None:
    request = parse_responses_request({"input": "hello"})
    assert (request.stream, request.tools, request.tool_results, request.has_tools) == (False, (), (), False)


def test_responses_json_reply_with_parallel_calls_and_usage() -> None:
    reply = ScriptedReply("resp_1", calls(2, namespace="functions"), None, USAGE)
    rendered = ResponsesCodec().render_reply(reply, JSON_REQUEST, "probe-model", 5)
    body = json.loads(rendered.body)
    assert body == rendered.response and rendered.sse_events is None and rendered.frames is None
    assert (body["id"], body["object"], body["status"], body["created_at"]) == ("resp_1", "response", "completed", 5)
    assert [(i["call_id"], i["namespace"], json.loads(i["arguments"])) for i in body["output"]] == [
        ("call_0", "functions", {"cmd": "echo 0"}),
        ("call_1", "functions", {"cmd": "echo 1"}),
    ]
    assert body["usage"] == {
        "input_tokens": 100,
        "input_tokens_details": {"cached_tokens": 3},
        "output_tokens": 7,
        "output_tokens_details": {"reasoning_tokens": 2},
        "total_tokens": 107,
    }
    assert (rendered.finish_reason, rendered.usage) == ("completed", USAGE)


def test_responses_text_stream_event_sequence() -> None:
    reply = ScriptedReply("resp_2", (), "PROBE_DONE", None)
    rendered = ResponsesCodec().render_reply(reply, STREAM, "probe-model", 5)
    events = payloads(rendered.body)
    assert rendered.body == b"".join(rendered.frames or ())
    assert [json.loads(e) for e in rendered.sse_events or ()] == [data for _, data in events]
    names = [name for name, _ in events]
    assert names == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [data["sequence_number"] for _, data in events] == list(range(len(events)))
    text = "".join(data["delta"] for name, data in events if name == "response.output_text.delta")
    assert text == "PROBE_DONE" and events[-1][1]["response"] == rendered.response
    assert "usage" not in rendered.response and events[0][1]["response"]["usage"] is None


def test_responses_events_are_derived_from_the_final_object() -> None:
    reply = ScriptedReply("resp_3", calls(1), None, USAGE)
    response = ResponsesCodec().render_reply(reply, JSON_REQUEST, "m", 1).response
    events = response_events(response)
    done = next(e for e in events if e["type"] == "response.function_call_arguments.done")
    deltas = [e["delta"] for e in events if e["type"] == "response.function_call_arguments.delta"]
    assert len(deltas) == 3 and "".join(deltas) == done["arguments"] == response["output"][0]["arguments"]
    added = next(e for e in events if e["type"] == "response.output_item.added")
    assert added["item"]["arguments"] == "" and added["item"]["status"] == "in_progress"


# -- Messages ----------------------------------------------------------------------------------------------


def test_messages_request_reads_client_tools_and_tool_results() -> None:
    request = parse_messages_request(
        {
            "stream": True,
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]},
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "t1", "content": "out"},
                        {"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text", "text": "a"}]},
                        {"type": "text", "text": "continue"},
                    ],
                },
            ],
            "tools": [
                {"type": "bash_20250124", "name": "bash"},
                {"name": "Bash", "input_schema": {"type": "object"}},
                {"type": "custom", "name": "Read", "input_schema": {"type": "object"}},
                {"name": "broken"},
            ],
        }
    )
    assert [t.name for t in request.tools] == ["Bash", "Read"] and request.has_tools
    assert request.latest_results() == {"t1": "out", "t2": "a"}


def test_messages_json_reply_and_error_shape() -> None:
    codec = MessagesCodec()
    reply = ScriptedReply("msg_1", calls(1), None, USAGE)
    rendered = codec.render_reply(reply, JSON_REQUEST, "probe-model", 1)
    body = json.loads(rendered.body)
    assert body["content"] == [{"type": "tool_use", "id": "call_0", "name": "exec_command", "input": {"cmd": "echo 0"}}]
    assert (body["stop_reason"], body["type"], body["role"]) == ("tool_use", "message", "assistant")
    # Anthropic's input_tokens leaves the cache reads out; the witness keeps them inside prompt.
    assert body["usage"] == {
        "input_tokens": 97,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 3,
        "output_tokens": 7,
    }
    # Messages carries no reasoning count and no total: the witness must not invent them.
    assert rendered.usage == Usage(prompt=100, completion=7, reasoning=None, cached=3, carries_total=False)
    assert rendered.usage.to_witness() == {
        "prompt": 100,
        "completion": 7,
        "reasoning": None,
        "total": None,
        "cached": 3,
    }
    assert codec.error_body(429, "slow down", "rate_limit_error", "429") == {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": "slow down"},
    }


def test_messages_text_stream_event_sequence_and_usage_placement() -> None:
    reply = ScriptedReply("msg_2", (), "PROBE_DONE", USAGE)
    rendered = MessagesCodec().render_reply(reply, STREAM, "probe-model", 1)
    events = payloads(rendered.body)
    assert [name for name, _ in events] == [
        "message_start",
        "ping",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    start = events[0][1]["message"]
    assert start["content"] == [] and start["stop_reason"] is None and start["usage"]["output_tokens"] == 1
    assert "".join(d["delta"]["text"] for n, d in events if n == "content_block_delta") == "PROBE_DONE"
    delta = events[-2][1]
    assert delta["delta"]["stop_reason"] == "end_turn" and delta["usage"]["output_tokens"] == 7
    # Both usage reports follow Anthropic's convention: input, cache reads and cache writes are disjoint.
    for usage in (start["usage"], delta["usage"]):
        assert (usage["input_tokens"], usage["cache_read_input_tokens"], usage["cache_creation_input_tokens"]) == (
            97,
            3,
            0,
        )
    assert rendered.usage is not None and rendered.usage.to_witness()["prompt"] == 100


def test_usage_whose_cache_exceeds_its_prompt_is_refused() -> None:
    # The Messages codec sends prompt - cached: a scripted usage may never make that negative.
    with pytest.raises(ValueError, match="within the prompt"):
        Usage(prompt=2, completion=1, reasoning=None, cached=3)


def test_messages_stream_without_usage_has_no_usage_anywhere() -> None:
    reply = ScriptedReply("msg_3", calls(1), None, None)
    message = MessagesCodec().render_reply(reply, JSON_REQUEST, "m", 1).response
    assert "usage" not in message
    events = message_events(message)
    assert all("usage" not in e and "usage" not in e.get("message", {}) for e in events)
    partial = "".join(e["delta"]["partial_json"] for e in events if e["type"] == "content_block_delta")
    assert json.loads(partial) == {"cmd": "echo 0"}


def test_closing_prompts_are_read_only_after_a_turn() -> None:
    """A user message that closes the history after a model turn (a side task on the same history), per protocol."""
    ask = "Summarize the conversation."
    responses = [
        {"role": "user", "content": [{"type": "input_text", "text": "task"}]},
        {"type": "function_call", "call_id": "c1", "name": "bash", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "ok"},
        {"role": "user", "content": [{"type": "input_text", "text": ask}]},
    ]
    assert parse_responses_request({"input": responses}).closing_prompt == ask
    assert parse_responses_request({"input": responses[:1]}).closing_prompt is None  # the task itself
    assert parse_responses_request({"input": responses[:3]}).closing_prompt is None  # a tool output closes it
    messages = [
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "bash", "input": {}}]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "ok"}, {"type": "text", "text": ask}],
        },
    ]
    assert parse_messages_request({"messages": messages}).closing_prompt == ask
    results_only = [*messages[:2], {"role": "user", "content": messages[2]["content"][:1]}]
    assert parse_messages_request({"messages": results_only}).closing_prompt is None
    assert parse_messages_request({"messages": messages[:1]}).closing_prompt is None
    contents = [
        {"role": "user", "parts": [{"text": "task"}]},
        {"role": "model", "parts": [{"functionCall": {"id": "c1", "name": "bash", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"id": "c1", "name": "bash", "response": {"output": "ok"}}}]},
        {"role": "user", "parts": [{"text": ask}]},
    ]
    assert parse_gemini_request({"contents": contents}).closing_prompt == ask
    assert parse_gemini_request({"contents": contents[:1]}).closing_prompt is None  # the task itself
    assert parse_gemini_request({"contents": contents[:3]}).closing_prompt is None  # a function response closes it
