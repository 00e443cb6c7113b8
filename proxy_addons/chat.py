"""Chat Completions codec: parses chat requests and renders scripted replies as JSON or SSE chunks."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from proxy_addons.protocol import (
    ModelRequest,
    RenderedReply,
    RequestShapeError,
    ScriptedReply,
    ToolResult,
    Usage,
    compact_json,
    rendered_reply,
)
from proxy_addons.shell_tool import ToolSpec

PROTOCOL = "chat"
DONE = "[DONE]"
# Streams split each tool call's arguments (and the answer text) into this many deltas, so clients
# that only look at the first delta are caught.
STREAM_PIECES = 3


class ChatCodec:
    """The Chat Completions protocol as the scripted provider speaks it."""

    protocol = PROTOCOL

    def parse_request(self, body: Mapping[str, Any]) -> ModelRequest:
        return parse_chat_request(body)

    def new_response_id(self) -> str:
        return f"chatcmpl-{uuid.uuid4().hex}"

    def new_tool_call_id(self) -> str:
        return f"call_{uuid.uuid4().hex}"

    def render_reply(self, reply: ScriptedReply, request: ModelRequest, model: str, created: int) -> RenderedReply:
        # A stream carries usage only when the client asked for it, as the real API does.
        carried = reply.usage if (not request.stream or request.stream_usage) else None
        completion = completion_object(reply, model, created, carried)
        finish_reason = completion["choices"][0]["finish_reason"]
        # Chat streams are data-only events (no `event:` lines).
        events = [(chunk, None) for chunk in completion_chunks(completion)] if request.stream else None
        return rendered_reply(completion, events, reply.response_id, finish_reason, carried)

    def error_body(self, status: int, message: str, error_type: str, code: str) -> dict[str, Any]:
        return {"error": {"message": message, "type": error_type, "code": code}}


def parse_chat_request(body: Mapping[str, Any]) -> ModelRequest:
    """Extract stream flags, advertised tools and tool results from a chat request body."""
    messages = body.get("messages", [])
    if not isinstance(messages, list):
        raise RequestShapeError("`messages` must be a list")
    tools = body.get("tools") or []
    if not isinstance(tools, list):
        raise RequestShapeError("`tools` must be a list")
    stream_options = body.get("stream_options")
    return ModelRequest(
        stream=body.get("stream") is True,
        stream_usage=isinstance(stream_options, Mapping) and stream_options.get("include_usage") is True,
        tools=chat_tool_specs(tools),
        tool_results=chat_tool_results(messages),
        has_tools=bool(tools),
        closing_prompt=chat_closing_prompt(messages),
    )


def chat_closing_prompt(messages: Sequence[object]) -> str | None:
    """The last message's text when it is a user message after an assistant or tool message."""
    if not messages or not isinstance(last := messages[-1], Mapping) or last.get("role") != "user":
        return None
    earlier = (m.get("role") for m in messages[:-1] if isinstance(m, Mapping))
    return (message_text(last.get("content")) or None) if any(r in ("assistant", "tool") for r in earlier) else None


def chat_tool_specs(tools: Sequence[object]) -> tuple[ToolSpec, ...]:
    """Tools in `{type: function, function: {name, parameters}}` form; other entries are skipped."""
    specs: list[ToolSpec] = []
    for tool in tools:
        if not isinstance(tool, Mapping) or tool.get("type", "function") != "function":
            continue
        function = tool.get("function")
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            continue
        parameters = function.get("parameters")
        if not isinstance(parameters, Mapping):
            parameters = {}
        specs.append(ToolSpec(name=function["name"], parameters=parameters))
    return tuple(specs)


def chat_tool_results(messages: Sequence[object]) -> tuple[ToolResult, ...]:
    """`role: tool` messages with their text, in history order."""
    results: list[ToolResult] = []
    for message in messages:
        if not isinstance(message, Mapping) or message.get("role") != "tool":
            continue
        call_id = message.get("tool_call_id")
        if isinstance(call_id, str):
            results.append(ToolResult(call_id=call_id, output=message_text(message.get("content"))))
    return tuple(results)


def message_text(content: object) -> str:
    """Message content as the model sees it: a string, or the text parts of a part list joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [part.get("text") for part in content if isinstance(part, Mapping)]
        return "".join(text for text in texts if isinstance(text, str))
    return ""


def chat_usage(usage: Usage) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.prompt,
        "completion_tokens": usage.completion,
        "total_tokens": usage.total,
        "prompt_tokens_details": {"cached_tokens": usage.cached},
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning},
    }


def completion_object(reply: ScriptedReply, model: str, created: int, usage: Usage | None) -> dict[str, Any]:
    """The `chat.completion` object for a scripted reply; `usage` is omitted entirely when None."""
    message: dict[str, Any]
    if reply.tool_calls:
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call.call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": compact_json(dict(call.arguments))},
                }
                for call in reply.tool_calls
            ],
        }
        finish_reason = "tool_calls"
    else:
        message = {"role": "assistant", "content": reply.text or ""}
        finish_reason = "stop"
    completion: dict[str, Any] = {
        "id": reply.response_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}],
    }
    if usage is not None:
        completion["usage"] = chat_usage(usage)
    return completion


def split_pieces(text: str, pieces: int = STREAM_PIECES) -> list[str]:
    """Split `text` into up to `pieces` non-empty consecutive parts (fewer only when it is shorter)."""
    if len(text) <= 1:
        return [text]
    count = min(pieces, len(text))
    size, extra = divmod(len(text), count)
    parts: list[str] = []
    start = 0
    for index in range(count):
        end = start + size + (1 if index < extra else 0)
        parts.append(text[start:end])
        start = end
    return parts


def completion_chunks(completion: Mapping[str, Any]) -> list[str]:
    """The `data:` payloads (ending with `[DONE]`) of a stream that encodes `completion`.

    Pure, so the streaming responder can pace, withhold or cut these same events. Usage
    travels as in the real API with `include_usage`: `usage: null` on every chunk, then a last chunk
    with no choices; a completion without usage yields chunks without any usage field.
    """
    choice = completion["choices"][0]
    message = choice["message"]
    usage = completion.get("usage")

    def chunk(delta: Mapping[str, Any] | None, finish_reason: str | None = None) -> str:
        payload: dict[str, Any] = {
            "id": completion["id"],
            "object": "chat.completion.chunk",
            "created": completion["created"],
            "model": completion["model"],
            "choices": []
            if delta is None
            else [{"index": 0, "delta": dict(delta), "finish_reason": finish_reason, "logprobs": None}],
        }
        if usage is not None:
            payload["usage"] = usage if delta is None else None
        return compact_json(payload)

    tool_calls = message.get("tool_calls") or []
    events: list[str] = []
    if tool_calls:
        events.append(chunk({"role": "assistant", "content": None}))
        for index, call in enumerate(tool_calls):
            function = call["function"]
            head = {
                "index": index,
                "id": call["id"],
                "type": "function",
                "function": {"name": function["name"], "arguments": ""},
            }
            events.append(chunk({"tool_calls": [head]}))
            for piece in split_pieces(function["arguments"]):
                events.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
    else:
        events.append(chunk({"role": "assistant", "content": ""}))
        for piece in split_pieces(message.get("content") or ""):
            events.append(chunk({"content": piece}))
    events.append(chunk({}, choice["finish_reason"]))
    if usage is not None:
        events.append(chunk(None))
    events.append(DONE)
    return events
