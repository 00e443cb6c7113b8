"""Anthropic Messages codec: parses `/v1/messages` requests and renders scripted replies as JSON or SSE events."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from proxy_addons.chat import message_text, split_pieces
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

PROTOCOL = "messages"
# What the real API reports in `message_start` before any output exists; the final count arrives in
# `message_delta`, so a client that keeps the first number records the wrong one.
START_OUTPUT_TOKENS = 1


class MessagesCodec:
    """The Anthropic Messages API as the scripted provider speaks it (Claude Code, pi/OpenCode in that mode)."""

    protocol = PROTOCOL

    def parse_request(self, body: Mapping[str, Any]) -> ModelRequest:
        return parse_messages_request(body)

    def new_response_id(self) -> str:
        return f"msg_{uuid.uuid4().hex}"

    def new_tool_call_id(self) -> str:
        return f"toolu_{uuid.uuid4().hex}"

    def render_reply(self, reply: ScriptedReply, request: ModelRequest, model: str, created: int) -> RenderedReply:
        # Messages carries neither a reasoning count nor a total: the witness records both as null.
        carried = (
            Usage(
                prompt=reply.usage.prompt,
                completion=reply.usage.completion,
                reasoning=None,
                cached=reply.usage.cached,
                carries_total=False,
            )
            if reply.usage is not None
            else None
        )
        message = message_object(reply, model, carried)
        events = [(compact_json(e), e["type"]) for e in message_events(message)] if request.stream else None
        return rendered_reply(message, events, reply.response_id, message["stop_reason"], carried)

    def error_body(self, status: int, message: str, error_type: str, code: str) -> dict[str, Any]:
        # The Anthropic error shape has no code field; the status carries it.
        return {"type": "error", "error": {"type": error_type, "message": message}}


def parse_messages_request(body: Mapping[str, Any]) -> ModelRequest:
    """Extract the stream flag, advertised tools and `tool_result` blocks from a Messages request body."""
    messages = body.get("messages", [])
    if not isinstance(messages, list):
        raise RequestShapeError("`messages` must be a list")
    tools = body.get("tools") or []
    if not isinstance(tools, list):
        raise RequestShapeError("`tools` must be a list")
    return ModelRequest(
        stream=body.get("stream") is True,
        stream_usage=True,
        tools=messages_tool_specs(tools),
        tool_results=messages_tool_results(messages),
        has_tools=bool(tools),
        closing_prompt=messages_closing_prompt(messages),
    )


def messages_closing_prompt(messages: Sequence[object]) -> str | None:
    """The text blocks of the last message when it is a user message after an assistant message (its tool
    results, which the same user message may carry, are not text blocks)."""
    if not messages or not isinstance(last := messages[-1], Mapping) or last.get("role") != "user":
        return None
    earlier = any(isinstance(m, Mapping) and m.get("role") == "assistant" for m in messages[:-1])
    return (message_text(last.get("content")) or None) if earlier else None


def messages_tool_specs(tools: Sequence[object]) -> tuple[ToolSpec, ...]:
    """Client tools `{name, input_schema}`; server tools (typed, without a schema) are skipped."""
    specs: list[ToolSpec] = []
    for tool in tools:
        if not isinstance(tool, Mapping) or tool.get("type", "custom") != "custom":
            continue
        name = tool.get("name")
        schema = tool.get("input_schema")
        if isinstance(name, str) and isinstance(schema, Mapping):
            specs.append(ToolSpec(name=name, parameters=schema))
    return tuple(specs)


def messages_tool_results(messages: Sequence[object]) -> tuple[ToolResult, ...]:
    """`tool_result` blocks of user messages, content as a string or text blocks joined, in history order."""
    results: list[ToolResult] = []
    for message in messages:
        if not isinstance(message, Mapping) or message.get("role") != "user":
            continue
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if not isinstance(block, Mapping) or block.get("type") != "tool_result":
                continue
            call_id = block.get("tool_use_id")
            if isinstance(call_id, str):
                results.append(ToolResult(call_id=call_id, output=message_text(block.get("content"))))
    return tuple(results)


def messages_usage(usage: Usage, output_tokens: int | None = None) -> dict[str, Any]:
    """Usage as Anthropic sends it: `input_tokens` leaves cache reads and writes out (the three are disjoint).

    The witness keeps our convention (prompt = all three, cached = the reads); the scripted provider writes
    nothing to a cache, so the writes are 0.
    """
    return {
        "input_tokens": usage.prompt - usage.cached,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": usage.cached,
        "output_tokens": usage.completion if output_tokens is None else output_tokens,
    }


def message_object(reply: ScriptedReply, model: str, usage: Usage | None) -> dict[str, Any]:
    """The `message` object for a scripted reply; `usage` is omitted entirely when None."""
    content: list[dict[str, Any]]
    if reply.tool_calls:
        content = [
            {"type": "tool_use", "id": call.call_id, "name": call.name, "input": dict(call.arguments)}
            for call in reply.tool_calls
        ]
        stop_reason = "tool_use"
    else:
        content = [{"type": "text", "text": reply.text or ""}]
        stop_reason = "end_turn"
    message: dict[str, Any] = {
        "id": reply.response_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
    }
    if usage is not None:
        message["usage"] = messages_usage(usage)
    return message


def message_events(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The event sequence that streams `message`: start, ping, one block at a time, delta with usage, stop.

    Tool input JSON and text are split over several deltas, so a client that keeps only one delta is
    caught. Without usage, neither `message_start` nor `message_delta` carries a `usage` object.
    """
    usage = message.get("usage")
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None}
    if usage is not None:
        start["usage"] = {**usage, "output_tokens": START_OUTPUT_TOKENS}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}, {"type": "ping"}]
    for index, block in enumerate(message["content"]):
        if block["type"] == "tool_use":
            head = {**block, "input": {}}
            pieces = [
                {"type": "input_json_delta", "partial_json": p} for p in split_pieces(compact_json(block["input"]))
            ]
        else:
            head = {**block, "text": ""}
            pieces = [{"type": "text_delta", "text": p} for p in split_pieces(block["text"])]
        events.append({"type": "content_block_start", "index": index, "content_block": head})
        events.extend({"type": "content_block_delta", "index": index, "delta": piece} for piece in pieces)
        events.append({"type": "content_block_stop", "index": index})
    delta: dict[str, Any] = {
        "type": "message_delta",
        "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
    }
    if usage is not None:
        delta["usage"] = dict(usage)
    events.append(delta)
    events.append({"type": "message_stop"})
    return events
