"""Anthropic Messages through the anthropic SDK: one policy call turned into a uniform reply, streamed or not."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

import anthropic
import httpx
from anthropic.types import (
    ContentBlockParam,
    Message,
    MessageParam,
    RawMessageStreamEvent,
    ToolParam,
    ToolResultBlockParam,
)

from probe_reference.attempts import ObservingClient
from probe_reference.replies import (
    INVALID_PREFIX,
    ErrorReply,
    MalformedReply,
    ModelReply,
    ReplyFailed,
    RequestedToolCall,
    count,
    optional_text,
    text,
)
from probe_reference.rollout import TokenStats
from probe_reference.tools import BASH_DESCRIPTION, BASH_PARAMETERS, TOOL_NAME, parse_arguments

MAX_TOKENS = 4096

BASH_TOOL: ToolParam = {"name": TOOL_NAME, "description": BASH_DESCRIPTION, "input_schema": BASH_PARAMETERS}

ANTHROPIC_FAILURES = (anthropic.AnthropicError, httpx.HTTPError, MalformedReply, ErrorReply, json.JSONDecodeError)


class ObservingAnthropicHttpClient(ObservingClient, anthropic.DefaultHttpxClient):
    """The anthropic SDK's default client (Messages), every attempt recorded."""


def anthropic_failure(exc: BaseException) -> ReplyFailed:
    """Name how the turn failed, with the payload retained for a 2xx attempt that yielded no reply."""
    reason = str(exc) or type(exc).__name__
    if isinstance(exc, ErrorReply):
        return ReplyFailed(reason, exc.category, exc.payload, unusable=True)
    # An `error` event inside a 200 stream: the SDK raises a status error carrying the 200 and the event data.
    if isinstance(exc, anthropic.APIStatusError) and 200 <= exc.status_code < 300:
        error = exc.body.get("error") if isinstance(exc.body, dict) else None
        message = error.get("message") if isinstance(error, dict) else None
        return ReplyFailed(message if isinstance(message, str) else reason, "stream_error", exc.body, unusable=True)
    if isinstance(exc, MalformedReply | anthropic.APIResponseValidationError | json.JSONDecodeError):
        return ReplyFailed(INVALID_PREFIX + reason, "invalid_response", str(exc), unusable=True)
    # Transport errors reach here unwrapped only from a body being streamed: the SDK wraps (and retries)
    # those that happen before the status line.
    broken = isinstance(exc, httpx.TransportError)
    return ReplyFailed(reason, "stream_cut", f"{type(exc).__name__}: {exc}", broken_stream=broken)


class MessagesDialog:
    """Stateless use of /v1/messages: the system prompt apart, the whole history sent every time."""

    protocol: Literal["messages"] = "messages"

    def __init__(self, client: anthropic.Anthropic, *, model: str, system_prompt: str, task: str) -> None:
        self._client = client
        self._model = model
        self.system = system_prompt
        self.messages: list[MessageParam] = [{"role": "user", "content": task}]
        # The tool_result blocks answering the latest assistant turn all go in one user message.
        self._results: list[ContentBlockParam] | None = None

    def request(self, *, stream: bool) -> ModelReply:
        try:
            if stream:
                events = self._client.messages.create(
                    model=self._model,
                    max_tokens=MAX_TOKENS,
                    system=self.system,
                    messages=list(self.messages),
                    tools=[BASH_TOOL],
                    stream=True,
                )
                with events:
                    return assemble_stream(events)
            message = self._client.messages.create(
                model=self._model,
                max_tokens=MAX_TOKENS,
                system=self.system,
                messages=list(self.messages),
                tools=[BASH_TOOL],
            )
            return from_message(message)
        except ANTHROPIC_FAILURES as exc:
            raise anthropic_failure(exc) from exc

    def add_reply(self, reply: ModelReply) -> None:
        blocks: list[ContentBlockParam] = []
        if reply.content:  # the API rejects empty text blocks
            blocks.append({"type": "text", "text": reply.content})
        for call in reply.tool_calls:
            arguments = parse_arguments(call.raw_arguments)
            blocks.append(
                {
                    "type": "tool_use",
                    "id": call.tool_call_id,
                    "name": call.tool_name,
                    # The API only takes an object; arguments that were not one are sent back empty.
                    "input": arguments if isinstance(arguments, dict) else {},
                }
            )
        self.messages.append({"role": "assistant", "content": blocks})
        self._results = None

    def add_own_turn(self, content: str) -> None:
        self.messages.append({"role": "assistant", "content": content})

    def add_tool_result(self, call: RequestedToolCall, output: str) -> None:
        block: ToolResultBlockParam = {"type": "tool_result", "tool_use_id": call.tool_call_id, "content": output}
        if self._results is None:
            self._results = []
            self.messages.append({"role": "user", "content": self._results})
        self._results.append(block)

    def close(self) -> None:
        self._client.close()


def from_message(message: Message | object) -> ModelReply:
    content = getattr(message, "content", None)
    error = getattr(message, "error", None)
    if getattr(message, "type", None) == "error" and isinstance(error, dict):
        # A 200 whose body is Anthropic's error object: the SDK builds a Message around it.
        said = error.get("message")
        raise ErrorReply(said if isinstance(said, str) else "the reply is an error", {"type": "error", "error": error})
    if not isinstance(content, list):
        raise MalformedReply("the reply has no content list")
    texts: list[str] = []
    calls: list[RequestedToolCall] = []
    for block in content:
        kind = getattr(block, "type", None)
        if kind == "text":
            texts.append(text(getattr(block, "text", None)))
        elif kind == "tool_use":
            given = getattr(block, "input", None)
            # An input that is text (not the object the API promises) is kept as the text it was.
            raw = given if isinstance(given, str) else json.dumps(given, ensure_ascii=False)
            calls.append(RequestedToolCall(text(getattr(block, "id", None)), text(getattr(block, "name", None)), raw))
    usage = getattr(message, "usage", None)
    return ModelReply(
        response_id=optional_text(getattr(message, "id", None)),
        finish_reason=optional_text(getattr(message, "stop_reason", None)),
        content="".join(texts) if texts else None,
        tool_calls=tuple(calls),
        tokens=token_stats(
            input_tokens=count(getattr(usage, "input_tokens", None)),
            output_tokens=count(getattr(usage, "output_tokens", None)),
            cache_read=count(getattr(usage, "cache_read_input_tokens", None)),
            cache_creation=count(getattr(usage, "cache_creation_input_tokens", None)),
        ),
    )


@dataclass
class _PartialBlock:
    kind: str
    text: list[str] = field(default_factory=list)
    tool_use_id: str = ""
    name: str = ""
    json_parts: list[str] = field(default_factory=list)
    start_input: object = None


def assemble_stream(events: Iterable[RawMessageStreamEvent]) -> ModelReply:
    """Fold the raw events: id from message_start, blocks by index, stop reason and usage from message_delta."""
    started = False
    response_id: str | None = None
    stop_reason: str | None = None
    blocks: dict[int, _PartialBlock] = {}
    # message_start carries the input count (and a provisional output count), message_delta the final
    # output count and sometimes the others again: a later report of the same count replaces an earlier one.
    usage: dict[str, int | None] = dict.fromkeys(
        ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    )
    for event in events:
        kind = getattr(event, "type", None)
        if kind == "message_start":
            started = True
            message = getattr(event, "message", None)
            response_id = optional_text(getattr(message, "id", None))
            stop_reason = optional_text(getattr(message, "stop_reason", None))
            _merge_usage(usage, getattr(message, "usage", None))
        elif kind == "content_block_start":
            start = getattr(event, "content_block", None)
            block = _PartialBlock(kind=text(getattr(start, "type", None)))
            block.tool_use_id = text(getattr(start, "id", None))
            block.name = text(getattr(start, "name", None))
            block.start_input = getattr(start, "input", None)
            if isinstance(getattr(start, "text", None), str) and getattr(start, "text", None):
                block.text.append(text(getattr(start, "text", None)))
            blocks[_index(event, len(blocks))] = block
        elif kind == "content_block_delta":
            delta = getattr(event, "delta", None)
            target = blocks.get(_index(event, -1))
            if target is None:
                continue
            delta_kind = getattr(delta, "type", None)
            if delta_kind == "text_delta":
                target.text.append(text(getattr(delta, "text", None)))
            elif delta_kind == "input_json_delta":
                target.json_parts.append(text(getattr(delta, "partial_json", None)))
        elif kind == "message_delta":
            stop_reason = optional_text(getattr(getattr(event, "delta", None), "stop_reason", None)) or stop_reason
            _merge_usage(usage, getattr(event, "usage", None))
    if not started:
        raise MalformedReply("the stream carried no message_start")
    texts: list[str] = []
    calls: list[RequestedToolCall] = []
    for _, block in sorted(blocks.items()):
        if block.kind == "text":
            texts.append("".join(block.text))
        elif block.kind == "tool_use":
            # Without input deltas the input is the (usually empty) object the block started with.
            raw = "".join(block.json_parts) if block.json_parts else json.dumps(block.start_input or {})
            calls.append(RequestedToolCall(block.tool_use_id, block.name, raw))
    return ModelReply(
        response_id=response_id,
        finish_reason=stop_reason,
        content="".join(texts) if texts else None,
        tool_calls=tuple(calls),
        tokens=token_stats(
            input_tokens=usage["input_tokens"],
            output_tokens=usage["output_tokens"],
            cache_read=usage["cache_read_input_tokens"],
            cache_creation=usage["cache_creation_input_tokens"],
        ),
    )


def token_stats(
    *, input_tokens: int | None, output_tokens: int | None, cache_read: int | None, cache_creation: int | None
) -> TokenStats:
    """Messages usage in the rollout's convention; no reasoning count is reported, and a sum with an unknown
    part is unknown.

    Anthropic's input_tokens leaves cache reads and writes out, so the prompt is the sum of the three.
    """
    parts = (input_tokens, cache_read, cache_creation)
    prompt = None if None in parts else sum(p for p in parts if p is not None)
    total = prompt + output_tokens if prompt is not None and output_tokens is not None else None
    return {
        "prompt": prompt,
        "completion": output_tokens,
        "reasoning": None,
        "total": total,
        "cached": cache_read,
    }


def _merge_usage(known: dict[str, int | None], usage: object) -> None:
    for name in known:
        value = count(getattr(usage, name, None))
        if value is not None:
            known[name] = value


def _index(event: object, default: int) -> int:
    index = getattr(event, "index", default)
    return index if isinstance(index, int) else default
