"""Chat Completions through the openai SDK: one policy call turned into a uniform reply, streamed or not."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import httpx
import openai
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionAssistantMessageParam,
    ChatCompletionChunk,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageParam,
)

from probe_reference.attempts import ObservingClient
from probe_reference.compaction import SUMMARY_PREFIX, SUMMARY_REQUEST
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
from probe_reference.tools import BASH_DESCRIPTION, BASH_PARAMETERS, TOOL_NAME

BASH_TOOL: ChatCompletionFunctionToolParam = {
    "type": "function",
    "function": {"name": TOOL_NAME, "description": BASH_DESCRIPTION, "parameters": BASH_PARAMETERS},
}

# What an openai SDK call can raise once the SDK has given up, besides our own reply checks.
# A body that is not JSON (or a stream event that is not) reaches the caller as the json module's own error.
OPENAI_FAILURES = (openai.OpenAIError, httpx.HTTPError, MalformedReply, ErrorReply, json.JSONDecodeError)


class ObservingHttpClient(ObservingClient, openai.DefaultHttpxClient):
    """The openai SDK's default client (Chat Completions and Responses), every attempt recorded."""


def openai_failure(exc: BaseException) -> ReplyFailed:
    """Name how the turn failed, with the payload retained for a 2xx attempt that yielded no reply."""
    reason = str(exc) or type(exc).__name__
    if isinstance(exc, ErrorReply):
        return ReplyFailed(reason, exc.category, exc.payload, unusable=True)
    # An error event inside a 200 stream is a bare APIError (no status) carrying the provider's payload.
    if type(exc) is openai.APIError and exc.body is not None:
        return ReplyFailed(reason, "stream_error", exc.body, unusable=True)
    if isinstance(exc, MalformedReply | openai.APIResponseValidationError | json.JSONDecodeError):
        return ReplyFailed(INVALID_PREFIX + reason, "invalid_response", str(exc), unusable=True)
    # Transport errors reach here unwrapped only from a body being streamed: the SDK wraps (and retries)
    # those that happen before the status line.
    broken = isinstance(exc, httpx.TransportError)
    return ReplyFailed(reason, "stream_cut", f"{type(exc).__name__}: {exc}", broken_stream=broken)


class ChatDialog:
    protocol: Literal["chat"] = "chat"

    def __init__(self, client: openai.OpenAI, *, model: str, system_prompt: str, task: str) -> None:
        self._client = client
        self._model = model
        self.messages: list[ChatCompletionMessageParam] = [
            {"role": "system", "content": system_prompt},
            {"role": "user", "content": task},
        ]

    def request(self, *, stream: bool) -> ModelReply:
        try:
            if stream:
                chunks = self._client.chat.completions.create(
                    model=self._model,
                    messages=list(self.messages),
                    tools=[BASH_TOOL],
                    stream=True,
                    stream_options={"include_usage": True},
                )
                with chunks:
                    return assemble_stream(chunks)
            completion = self._client.chat.completions.create(
                model=self._model, messages=list(self.messages), tools=[BASH_TOOL]
            )
            return from_completion(completion)
        except OPENAI_FAILURES as exc:
            raise openai_failure(exc) from exc

    def add_reply(self, reply: ModelReply) -> None:
        message: ChatCompletionAssistantMessageParam = {"role": "assistant", "content": reply.content}
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.tool_call_id,
                    "type": "function",
                    "function": {"name": call.tool_name, "arguments": call.raw_arguments},
                }
                for call in reply.tool_calls
            ]
        self.messages.append(message)

    def add_own_turn(self, content: str) -> None:
        self.messages.append({"role": "assistant", "content": content})

    def add_tool_result(self, call: RequestedToolCall, output: str) -> None:
        self.messages.append({"role": "tool", "tool_call_id": call.tool_call_id, "content": output})

    def model_lookup(self, model: str, api_key: str | None) -> tuple[str, dict[str, str]]:
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        return f"{str(self._client.base_url).rstrip('/')}/models/{model}", headers

    def compactable(self) -> bool:
        return self._last_assistant() > 2

    def summarize(self) -> ModelReply:
        # No tools: a summary is text, and a side request without tools is what providers see as compaction.
        messages: list[ChatCompletionMessageParam] = [*self.messages, {"role": "user", "content": SUMMARY_REQUEST}]
        try:
            completion = self._client.chat.completions.create(model=self._model, messages=messages)
            return from_completion(completion)
        except OPENAI_FAILURES as exc:
            raise openai_failure(exc) from exc

    def replace_older(self, summary: str) -> None:
        last = self._last_assistant()
        self.messages[2:last] = [{"role": "user", "content": SUMMARY_PREFIX + summary}]

    def _last_assistant(self) -> int:
        return max((n for n, m in enumerate(self.messages) if m["role"] == "assistant"), default=-1)

    def close(self) -> None:
        self._client.close()


def from_completion(completion: ChatCompletion) -> ModelReply:
    choices = getattr(completion, "choices", None) or []
    error = getattr(completion, "error", None)
    if not choices and isinstance(error, dict):
        # A 200 whose body is an error object (a gateway's way): the SDK builds a completion around it.
        message = error.get("message")
        raise ErrorReply(message if isinstance(message, str) else "the reply is an error", error)
    if not choices:
        raise MalformedReply("the reply has no choices")
    choice = choices[0]
    message = getattr(choice, "message", None)
    calls: list[RequestedToolCall] = []
    for call in getattr(message, "tool_calls", None) or []:
        function = getattr(call, "function", None)
        if function is not None:
            name, arguments = getattr(function, "name", None), getattr(function, "arguments", None)
        else:  # a custom (non-function) tool call: keep it so the agent can answer that the tool is unknown
            custom = getattr(call, "custom", None)
            name, arguments = getattr(custom, "name", None), getattr(custom, "input", None)
        calls.append(RequestedToolCall(text(getattr(call, "id", None)), text(name), text(arguments)))
    return ModelReply(
        response_id=optional_text(getattr(completion, "id", None)),
        finish_reason=optional_text(getattr(choice, "finish_reason", None)),
        content=optional_text(getattr(message, "content", None)),
        tool_calls=tuple(calls),
        tokens=token_stats(getattr(completion, "usage", None)),
    )


@dataclass
class _PartialCall:
    tool_call_id: str = ""
    tool_name: str = ""
    arguments: str = ""


def assemble_stream(chunks: Iterable[ChatCompletionChunk]) -> ModelReply:
    """Fold SSE chunks into one reply: content and arguments concatenate, ids and names arrive once."""
    seen_any = False
    response_id: str | None = None
    finish_reason: str | None = None
    content: list[str] = []
    partial: dict[int, _PartialCall] = {}
    usage: object = None
    for chunk in chunks:
        seen_any = True
        response_id = response_id or optional_text(getattr(chunk, "id", None))
        # With include_usage the usage rides on a final chunk without choices; earlier chunks carry null.
        chunk_usage = getattr(chunk, "usage", None)
        if chunk_usage is not None:
            usage = chunk_usage
        for choice in getattr(chunk, "choices", None) or []:
            if getattr(choice, "index", 0) != 0:
                continue
            finish_reason = optional_text(getattr(choice, "finish_reason", None)) or finish_reason
            delta = getattr(choice, "delta", None)
            piece_text = getattr(delta, "content", None)
            if isinstance(piece_text, str):
                content.append(piece_text)
            for piece in getattr(delta, "tool_calls", None) or []:
                index = getattr(piece, "index", 0)
                call = partial.setdefault(index if isinstance(index, int) else 0, _PartialCall())
                call.tool_call_id = call.tool_call_id or text(getattr(piece, "id", None))
                function = getattr(piece, "function", None)
                call.tool_name = call.tool_name or text(getattr(function, "name", None))
                call.arguments += text(getattr(function, "arguments", None))
    if not seen_any:
        raise MalformedReply("the stream carried no chunks")
    calls = tuple(RequestedToolCall(p.tool_call_id, p.tool_name, p.arguments) for _, p in sorted(partial.items()))
    return ModelReply(
        response_id=response_id,
        finish_reason=finish_reason,
        content="".join(content) if content else None,
        tool_calls=calls,
        tokens=token_stats(usage),
    )


def token_stats(usage: object) -> TokenStats:
    """Usage as reported; any count the reply did not carry is None (unknown), never 0."""
    prompt_details = getattr(usage, "prompt_tokens_details", None)
    completion_details = getattr(usage, "completion_tokens_details", None)
    return {
        "prompt": count(getattr(usage, "prompt_tokens", None)),
        "completion": count(getattr(usage, "completion_tokens", None)),
        "reasoning": count(getattr(completion_details, "reasoning_tokens", None)),
        "total": count(getattr(usage, "total_tokens", None)),
        "cached": count(getattr(prompt_details, "cached_tokens", None)),
    }
