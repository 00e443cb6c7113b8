"""One policy call through the SDK, turned into a uniform reply whether it was streamed or not."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import openai
from openai.types.chat import ChatCompletion, ChatCompletionChunk, ChatCompletionMessageParam

from probe_reference.rollout import TokenStats
from probe_reference.tools import BASH_TOOL

# The SDK builds reply objects without validation, so a field the provider left out is missing rather
# than None; every read below goes through getattr with a default for that reason.


class MalformedReply(Exception):
    """The provider answered 2xx but the reply has nothing usable in it (no choices, no chunks)."""


@dataclass(frozen=True)
class RequestedToolCall:
    tool_call_id: str
    tool_name: str
    raw_arguments: str


@dataclass(frozen=True)
class ModelReply:
    response_id: str | None
    finish_reason: str | None
    content: str | None
    tool_calls: tuple[RequestedToolCall, ...]
    tokens: TokenStats


def request_reply(
    client: openai.OpenAI, *, model: str, messages: Sequence[ChatCompletionMessageParam], stream: bool
) -> ModelReply:
    """Ask the model for its next turn; the SDK's own retry policy applies."""
    if stream:
        chunks = client.chat.completions.create(
            model=model,
            messages=list(messages),
            tools=[BASH_TOOL],
            stream=True,
            stream_options={"include_usage": True},
        )
        with chunks:
            return assemble_stream(chunks)
    completion = client.chat.completions.create(model=model, messages=list(messages), tools=[BASH_TOOL])
    return from_completion(completion)


def from_completion(completion: ChatCompletion) -> ModelReply:
    choices = getattr(completion, "choices", None) or []
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
        calls.append(RequestedToolCall(_text(getattr(call, "id", None)), _text(name), _text(arguments)))
    return ModelReply(
        response_id=_optional_text(getattr(completion, "id", None)),
        finish_reason=_optional_text(getattr(choice, "finish_reason", None)),
        content=_optional_text(getattr(message, "content", None)),
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
        response_id = response_id or _optional_text(getattr(chunk, "id", None))
        # With include_usage the usage rides on a final chunk without choices; earlier chunks carry null.
        chunk_usage = getattr(chunk, "usage", None)
        if chunk_usage is not None:
            usage = chunk_usage
        for choice in getattr(chunk, "choices", None) or []:
            if getattr(choice, "index", 0) != 0:
                continue
            finish_reason = _optional_text(getattr(choice, "finish_reason", None)) or finish_reason
            delta = getattr(choice, "delta", None)
            text = getattr(delta, "content", None)
            if isinstance(text, str):
                content.append(text)
            for piece in getattr(delta, "tool_calls", None) or []:
                index = getattr(piece, "index", 0)
                call = partial.setdefault(index if isinstance(index, int) else 0, _PartialCall())
                call.tool_call_id = call.tool_call_id or _text(getattr(piece, "id", None))
                function = getattr(piece, "function", None)
                call.tool_name = call.tool_name or _text(getattr(function, "name", None))
                call.arguments += _text(getattr(function, "arguments", None))
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
        "prompt": _count(getattr(usage, "prompt_tokens", None)),
        "completion": _count(getattr(usage, "completion_tokens", None)),
        "reasoning": _count(getattr(completion_details, "reasoning_tokens", None)),
        "total": _count(getattr(usage, "total_tokens", None)),
        "cached": _count(getattr(prompt_details, "cached_tokens", None)),
    }


def _count(value: object) -> int | None:
    # bool is an int subclass; a provider's `true` is not a token count.
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def _optional_text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""
