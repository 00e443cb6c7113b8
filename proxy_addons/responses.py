"""OpenAI Responses codec: parses `/v1/responses` requests and renders scripted replies as JSON or SSE events."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from proxy_addons.chat import message_text, split_pieces
from proxy_addons.protocol import (
    IssuedToolCall,
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

PROTOCOL = "responses"
COMPLETED = "completed"


class ResponsesCodec:
    """The Responses API as the scripted provider speaks it (Codex, and pi/OpenCode in Responses mode)."""

    protocol = PROTOCOL

    def parse_request(self, body: Mapping[str, Any]) -> ModelRequest:
        return parse_responses_request(body)

    def new_response_id(self) -> str:
        return f"resp_{uuid.uuid4().hex}"

    def new_tool_call_id(self) -> str:
        return f"call_{uuid.uuid4().hex}"

    def render_reply(self, reply: ScriptedReply, request: ModelRequest, model: str, created: int) -> RenderedReply:
        # Unlike Chat, a Responses stream always ends with the full response, usage included.
        response = response_object(reply, model, created, reply.usage)
        events = [(compact_json(e), e["type"]) for e in response_events(response)] if request.stream else None
        return rendered_reply(response, events, reply.response_id, COMPLETED, reply.usage)

    def error_body(self, status: int, message: str, error_type: str, code: str) -> dict[str, Any]:
        return {"error": {"message": message, "type": error_type, "code": code, "param": None}}


def parse_responses_request(body: Mapping[str, Any]) -> ModelRequest:
    """Extract the stream flag, advertised tools (namespaces flattened) and function-call outputs."""
    items = body.get("input", [])
    if isinstance(items, str):
        items = []
    if not isinstance(items, list):
        raise RequestShapeError("`input` must be a string or a list of items")
    tools = body.get("tools") or []
    if not isinstance(tools, list):
        raise RequestShapeError("`tools` must be a list")
    return ModelRequest(
        stream=body.get("stream") is True,
        stream_usage=True,
        tools=responses_tool_specs(tools),
        tool_results=responses_tool_results(items),
        has_tools=bool(tools),
        closing_prompt=responses_closing_prompt(items),
    )


def responses_closing_prompt(items: Sequence[object]) -> str | None:
    """The last input item's text when it is a user message after a function call, its output or a reply."""
    if not items or not isinstance(last := items[-1], Mapping) or last.get("role") != "user":
        return None
    if last.get("type", "message") != "message":
        return None
    turns = ("function_call", "function_call_output")
    earlier = [
        i for i in items[:-1] if isinstance(i, Mapping) and (i.get("type") in turns or i.get("role") == "assistant")
    ]
    return (message_text(last.get("content")) or None) if earlier else None


def _function_spec(tool: Mapping[str, Any], namespace: str | None) -> ToolSpec | None:
    # Chat-style `{type: function, function: {...}}` is accepted too: some clients send it here.
    source = tool.get("function") if isinstance(tool.get("function"), Mapping) else tool
    assert isinstance(source, Mapping)
    name = source.get("name")
    if not isinstance(name, str):
        return None
    parameters = source.get("parameters")
    return ToolSpec(name=name, parameters=parameters if isinstance(parameters, Mapping) else {}, namespace=namespace)


def responses_tool_specs(tools: Sequence[object]) -> tuple[ToolSpec, ...]:
    """Function tools, with those inside a Codex `namespace` tool flattened and tagged with its name."""
    specs: list[ToolSpec] = []
    for tool in tools:
        if not isinstance(tool, Mapping):
            continue
        kind = tool.get("type", "function")
        if kind == "function":
            spec = _function_spec(tool, None)
            if spec is not None:
                specs.append(spec)
        elif kind == "namespace" and isinstance(tool.get("name"), str) and isinstance(tool.get("tools"), list):
            for member in tool["tools"]:
                if isinstance(member, Mapping) and member.get("type", "function") == "function":
                    spec = _function_spec(member, tool["name"])
                    if spec is not None:
                        specs.append(spec)
    return tuple(specs)


def responses_tool_results(items: Sequence[object]) -> tuple[ToolResult, ...]:
    """`function_call_output` items with their text (a string, or text parts joined), in input order."""
    results: list[ToolResult] = []
    for item in items:
        if not isinstance(item, Mapping) or item.get("type") != "function_call_output":
            continue
        call_id = item.get("call_id")
        if isinstance(call_id, str):
            results.append(ToolResult(call_id=call_id, output=message_text(item.get("output"))))
    return tuple(results)


def responses_usage(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.prompt,
        "input_tokens_details": {"cached_tokens": usage.cached},
        "output_tokens": usage.completion,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning},
        "total_tokens": usage.total,
    }


def _function_call_item(call: IssuedToolCall) -> dict[str, Any]:
    item: dict[str, Any] = {
        "type": "function_call",
        "id": f"fc_{uuid.uuid4().hex}",
        "call_id": call.call_id,
        "name": call.name,
        "arguments": compact_json(dict(call.arguments)),
        "status": COMPLETED,
    }
    if call.namespace is not None:
        # A tool advertised inside a namespace is called by its own name plus the namespace (Codex).
        item["namespace"] = call.namespace
    return item


def response_object(reply: ScriptedReply, model: str, created: int, usage: Usage | None) -> dict[str, Any]:
    """The completed `response` object for a scripted reply; `usage` is omitted entirely when None."""
    output: list[dict[str, Any]]
    if reply.tool_calls:
        output = [_function_call_item(call) for call in reply.tool_calls]
    else:
        output = [
            {
                "type": "message",
                "id": f"msg_{uuid.uuid4().hex}",
                "status": COMPLETED,
                "role": "assistant",
                "content": [{"type": "output_text", "text": reply.text or "", "annotations": [], "logprobs": []}],
            }
        ]
    response: dict[str, Any] = {
        "id": reply.response_id,
        "object": "response",
        "created_at": created,
        "status": COMPLETED,
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": False,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "user": None,
        "metadata": {},
    }
    if usage is not None:
        response["usage"] = responses_usage(usage)
    return response


def response_events(response: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The event sequence that streams `response`, each with its `sequence_number`.

    Function-call arguments and output text are split over several deltas, so a client that keeps
    only the first or the last delta is caught.
    """
    events: list[dict[str, Any]] = []

    def emit(kind: str, **fields: Any) -> None:
        events.append({"type": kind, **fields, "sequence_number": len(events)})

    started = {**response, "status": "in_progress", "output": [], "usage": None}
    emit("response.created", response=started)
    emit("response.in_progress", response=started)
    for index, item in enumerate(response["output"]):
        item_id = item["id"]
        if item["type"] == "function_call":
            emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "arguments": "", "status": "in_progress"},
            )
            for piece in split_pieces(item["arguments"]):
                emit("response.function_call_arguments.delta", item_id=item_id, output_index=index, delta=piece)
            emit(
                "response.function_call_arguments.done",
                item_id=item_id,
                output_index=index,
                name=item["name"],
                arguments=item["arguments"],
            )
        else:
            part = item["content"][0]
            emit(
                "response.output_item.added", output_index=index, item={**item, "status": "in_progress", "content": []}
            )
            located = {"item_id": item_id, "output_index": index, "content_index": 0}
            emit("response.content_part.added", **located, part={**part, "text": ""})
            for piece in split_pieces(part["text"]):
                emit("response.output_text.delta", **located, delta=piece, logprobs=[])
            emit("response.output_text.done", **located, text=part["text"], logprobs=[])
            emit("response.content_part.done", **located, part=part)
        emit("response.output_item.done", output_index=index, item=item)
    emit("response.completed", response=dict(response))
    return events
