"""Chat Completions codec as pure functions: request parsing, completion objects, SSE chunk payloads."""

from __future__ import annotations

import json
from typing import Any

import pytest

from proxy_addons import sse
from proxy_addons.chat import (
    ChatCodec,
    completion_chunks,
    completion_object,
    message_text,
    parse_chat_request,
    split_pieces,
)
from proxy_addons.protocol import (
    IssuedToolCall,
    RequestShapeError,
    ScriptedReply,
    ToolResult,
    usage_for_attempt,
)


def tool_reply(count: int = 1) -> ScriptedReply:
    calls = tuple(
        IssuedToolCall(
            call_id=f"call_{n}",
            name="bash",
            arguments={"command": f"echo {n}"},
            command=f"echo {n}",
            marker_path=f"/probe/markers/call_{n}.txt",
            token=f"probe_{n}",
            exit_code=0,
            expected_output=f"probe_{n}\n",
        )
        for n in range(count)
    )
    return ScriptedReply(response_id="chatcmpl-x", tool_calls=calls, text=None, usage=usage_for_attempt(2))


def payloads(events: list[str]) -> list[dict[str, Any]]:
    assert events[-1] == "[DONE]"
    return [json.loads(event) for event in events[:-1]]


def test_parse_request_reads_stream_flags_tools_and_results() -> None:
    request = parse_chat_request(
        {
            "stream": True,
            "stream_options": {"include_usage": True},
            "tools": [
                {"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}},
                {"type": "custom", "custom": {"name": "apply_patch"}},
            ],
            "messages": [
                {"role": "user", "content": "go"},
                {"role": "tool", "tool_call_id": "call_1", "content": "a"},
                {
                    "role": "tool",
                    "tool_call_id": "call_2",
                    "content": [{"type": "text", "text": "b"}, {"text": "c"}],
                },
            ],
        }
    )
    assert (request.stream, request.stream_usage) == (True, True)
    assert [tool.name for tool in request.tools] == ["bash"]
    assert request.tool_results == (ToolResult("call_1", "a"), ToolResult("call_2", "bc"))


@pytest.mark.parametrize("body", [{"messages": "hi"}, {"messages": [], "tools": {"bash": {}}}])
def test_parse_request_rejects_wrong_shapes(body: dict[str, Any]) -> None:
    with pytest.raises(RequestShapeError):
        parse_chat_request(body)


def test_message_text_joins_text_parts() -> None:
    assert message_text(None) == ""
    assert message_text([{"type": "text", "text": "x"}, {"type": "image_url"}, "junk", {"text": "y"}]) == "xy"


@pytest.mark.parametrize(("text", "count"), [("", 1), ("a", 1), ("ab", 2), ("PROBE_DONE", 3)])
def test_split_pieces_keeps_text_and_splits_when_possible(text: str, count: int) -> None:
    pieces = split_pieces(text)
    assert "".join(pieces) == text and len(pieces) == count


def test_tool_call_chunks_role_first_arguments_split_then_finish_and_usage() -> None:
    completion = completion_object(tool_reply(2), "probe-model", 7, usage_for_attempt(2))
    chunks = payloads(completion_chunks(completion))
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": None}
    assert all(chunk["id"] == "chatcmpl-x" and chunk["object"] == "chat.completion.chunk" for chunk in chunks)
    arguments: dict[int, str] = {}
    pieces: dict[int, int] = {}
    for chunk in chunks[1:-2]:
        (delta_call,) = chunk["choices"][0]["delta"]["tool_calls"]
        index = delta_call["index"]
        arguments[index] = arguments.get(index, "") + delta_call["function"]["arguments"]
        pieces[index] = pieces.get(index, 0) + 1
    assert [json.loads(arguments[i]) for i in (0, 1)] == [{"command": "echo 0"}, {"command": "echo 1"}]
    assert all(count >= 3 for count in pieces.values())  # head + at least two argument pieces
    assert chunks[-2]["choices"] == [{"index": 0, "delta": {}, "finish_reason": "tool_calls", "logprobs": None}]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["prompt_tokens"] == 120
    assert all(chunk["usage"] is None for chunk in chunks[:-1])


def test_text_chunks_without_usage_have_no_usage_field() -> None:
    reply = ScriptedReply(response_id="chatcmpl-y", tool_calls=(), text="PROBE_DONE", usage=None)
    chunks = payloads(completion_chunks(completion_object(reply, "m", 0, None)))
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert "".join(c["choices"][0]["delta"].get("content", "") for c in chunks) == "PROBE_DONE"
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert all("usage" not in chunk for chunk in chunks)


def test_stream_without_include_usage_carries_no_usage() -> None:
    request = parse_chat_request({"stream": True, "messages": []})
    rendered = ChatCodec().render_reply(tool_reply(), request, "m", 0)
    assert rendered.usage is None and "usage" not in rendered.response
    assert rendered.sse_events is not None and all('"usage"' not in event for event in rendered.sse_events)


def test_sse_framing() -> None:
    assert sse.encode_data_events(["{}", "[DONE]"]) == b"data: {}\n\ndata: [DONE]\n\n"
    assert sse.encode_event("a\nb", event="x") == b"event: x\ndata: a\ndata: b\n\n"
