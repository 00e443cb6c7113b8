"""The Responses API through the openai SDK: one policy call turned into a uniform reply, streamed or not."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import openai
from openai.types.responses import FunctionToolParam, Response, ResponseInputItemParam, ResponseStreamEvent

from probe_reference.chat import OPENAI_FAILURES, openai_failure
from probe_reference.replies import (
    ErrorReply,
    MalformedReply,
    ModelReply,
    RequestedToolCall,
    count,
    optional_text,
    text,
)
from probe_reference.rollout import TokenStats
from probe_reference.tools import BASH_DESCRIPTION, BASH_PARAMETERS, TOOL_NAME

BASH_TOOL: FunctionToolParam = {
    "type": "function",
    "name": TOOL_NAME,
    "description": BASH_DESCRIPTION,
    "parameters": BASH_PARAMETERS,
    "strict": False,
}

# Terminal stream events that deliver a response (`incomplete` still delivers what was generated).
_DELIVERED = frozenset({"response.completed", "response.incomplete"})


class ResponsesDialog:
    """Stateless use of /responses: the whole history is sent as `input` items every time."""

    protocol: Literal["responses"] = "responses"

    def __init__(self, client: openai.OpenAI, *, model: str, system_prompt: str, task: str) -> None:
        self._client = client
        self._model = model
        self.items: list[ResponseInputItemParam] = [
            {"type": "message", "role": "system", "content": system_prompt},
            {"type": "message", "role": "user", "content": task},
        ]

    def request(self, *, stream: bool) -> ModelReply:
        try:
            if stream:
                events = self._client.responses.create(
                    model=self._model, input=list(self.items), tools=[BASH_TOOL], stream=True
                )
                with events:
                    return assemble_stream(events)
            response = self._client.responses.create(model=self._model, input=list(self.items), tools=[BASH_TOOL])
            return from_response(response)
        except OPENAI_FAILURES as exc:
            raise openai_failure(exc) from exc

    def add_reply(self, reply: ModelReply) -> None:
        if reply.content is not None:
            self.items.append({"type": "message", "role": "assistant", "content": reply.content})
        for call in reply.tool_calls:
            self.items.append(
                {
                    "type": "function_call",
                    "call_id": call.tool_call_id,
                    "name": call.tool_name,
                    "arguments": call.raw_arguments,
                }
            )

    def add_own_turn(self, content: str) -> None:
        self.items.append({"type": "message", "role": "assistant", "content": content})

    def add_tool_result(self, call: RequestedToolCall, output: str) -> None:
        self.items.append({"type": "function_call_output", "call_id": call.tool_call_id, "output": output})

    def close(self) -> None:
        self._client.close()


def from_response(response: Response | object, *, fallback_items: Iterable[object] = ()) -> ModelReply:
    """A response object (a JSON reply, or the one a terminal stream event carries) as a uniform reply."""
    output = getattr(response, "output", None)
    if not isinstance(output, list):
        raise MalformedReply("the response has no output list")
    status = optional_text(getattr(response, "status", None))
    if status == "failed":
        error = getattr(response, "error", None)
        message = optional_text(getattr(error, "message", None)) or "the response failed"
        raise ErrorReply(message, _payload(error if error is not None else response), "response_failed")
    items: list[object] = list(output) or list(fallback_items)
    texts: list[str] = []
    calls: list[RequestedToolCall] = []
    for item in items:
        kind = getattr(item, "type", None)
        if kind == "message":
            for part in getattr(item, "content", None) or []:
                if getattr(part, "type", None) == "output_text":
                    texts.append(text(getattr(part, "text", None)))
        elif kind == "function_call":
            calls.append(
                RequestedToolCall(
                    text(getattr(item, "call_id", None)),
                    text(getattr(item, "name", None)),
                    text(getattr(item, "arguments", None)),
                )
            )
    return ModelReply(
        response_id=optional_text(getattr(response, "id", None)),
        finish_reason=status,
        content="".join(texts) if texts else None,
        tool_calls=tuple(calls),
        tokens=token_stats(getattr(response, "usage", None)),
    )


def assemble_stream(events: Iterable[ResponseStreamEvent]) -> ModelReply:
    """The reply is the response that `response.completed` carries: id, status, output and usage."""
    done_items: dict[int, object] = {}
    for event in events:
        kind = getattr(event, "type", None)
        if kind == "response.output_item.done":
            index = getattr(event, "output_index", len(done_items))
            done_items[index if isinstance(index, int) else len(done_items)] = getattr(event, "item", None)
        elif kind in _DELIVERED:
            # A terminal response without its output items falls back to the items streamed one by one.
            return from_response(getattr(event, "response", None), fallback_items=_in_order(done_items))
        elif kind == "response.failed":
            response = getattr(event, "response", None)
            error = getattr(response, "error", None)
            message = optional_text(getattr(error, "message", None)) or "the response failed"
            raise ErrorReply(message, _payload(error if error is not None else response))
        elif kind == "error":
            message = optional_text(getattr(event, "message", None)) or "error event in the stream"
            raise ErrorReply(message, _payload(event))
    raise MalformedReply("the stream ended without response.completed")


def token_stats(usage: object) -> TokenStats:
    """Responses usage as reported; any count the reply did not carry is None (unknown), never 0."""
    input_details = getattr(usage, "input_tokens_details", None)
    output_details = getattr(usage, "output_tokens_details", None)
    return {
        "prompt": count(getattr(usage, "input_tokens", None)),
        "completion": count(getattr(usage, "output_tokens", None)),
        "reasoning": count(getattr(output_details, "reasoning_tokens", None)),
        "total": count(getattr(usage, "total_tokens", None)),
        "cached": count(getattr(input_details, "cached_tokens", None)),
    }


def _in_order(items: dict[int, object]) -> list[object]:
    return [item for _, item in sorted(items.items()) if item is not None]


def _payload(value: object) -> object:
    """An SDK object back as the JSON it was built from (only the fields that were present)."""
    to_dict = getattr(value, "to_dict", None)
    return to_dict() if callable(to_dict) else value
