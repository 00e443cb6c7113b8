"""Protocol-neutral request/reply model and the codec interface every provider protocol implements."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from proxy_addons import sse
from proxy_addons.shell_tool import ToolSpec

JSON_CONTENT_TYPE = "application/json"


class RequestShapeError(ValueError):
    """A model request that is JSON but not shaped like the protocol's request."""


@dataclass(frozen=True)
class ToolResult:
    """A tool result found in a request's history, as the model would see it."""

    call_id: str
    output: str


@dataclass(frozen=True)
class ModelRequest:
    """What the provider needs from a model request, whatever its protocol."""

    stream: bool
    # Whether a streamed reply should carry usage (Chat's stream_options.include_usage).
    stream_usage: bool
    tools: tuple[ToolSpec, ...]
    tool_results: tuple[ToolResult, ...]
    # Whether the request advertised any tools at all (usable as a shell or not): a request with none
    # in the middle of a tool-using run is a side request (title, summary), not the agent loop.
    has_tools: bool = True
    # The text of a user message that closes the history after a model turn or a tool result: the agent loop
    # never appends one, a harness asking for a side task on the same history (Copilot CLI's summary) does.
    closing_prompt: str | None = None

    def latest_results(self) -> dict[str, str]:
        """Output per call id; a later entry for the same id wins (that is what the model saw last)."""
        return {result.call_id: result.output for result in self.tool_results}


@dataclass(frozen=True)
class Usage:
    """Token counts in protocol-neutral names (the witness's names)."""

    prompt: int
    completion: int
    reasoning: int | None  # None where the protocol has no such count (Messages)
    cached: int
    carries_total: bool = True  # False where the protocol sends no total (Messages)

    def __post_init__(self) -> None:
        # `cached` is part of `prompt` (docs/recorded-vs-inferred.md): the Messages codec sends the difference.
        if not 0 <= self.cached <= self.prompt:
            raise ValueError(f"cached tokens ({self.cached}) must lie within the prompt ({self.prompt})")

    @property
    def total(self) -> int:
        return self.prompt + self.completion

    def to_witness(self) -> dict[str, int | None]:
        # The witness records what the wire carried: a count the protocol does not send is null, not made up.
        return {
            "prompt": self.prompt,
            "completion": self.completion,
            "reasoning": self.reasoning,
            "total": self.total if self.carries_total else None,
            "cached": self.cached,
        }


def compact_json(value: object) -> str:
    """JSON as the codecs put it on the wire: no spaces, and never NaN (which real SDKs reject)."""
    return json.dumps(value, separators=(",", ":"), allow_nan=False)


def usage_for_attempt(model_attempt: int) -> Usage:
    """Scripted usage: distinct per model attempt so any self-reported count joins to one attempt."""
    return Usage(prompt=100 + 10 * model_attempt, completion=7 + model_attempt, reasoning=2, cached=3)


def usage_for_auxiliary(index: int) -> Usage:
    """Usage of canned side replies: a range of its own, so it never joins to a scripted model attempt."""
    return Usage(prompt=50 + index, completion=3, reasoning=0, cached=0)


@dataclass(frozen=True)
class IssuedToolCall:
    """A shell tool call the provider sends, with everything needed to verify it later."""

    call_id: str
    name: str
    arguments: Mapping[str, Any]
    command: str
    marker_path: str
    token: str
    exit_code: int
    expected_output: str
    # Namespace the tool was advertised under (Responses `namespace` tools), echoed on the call.
    namespace: str | None = None
    # The call that delivers the final answer through the shell: the harness ends after running it.
    final_submit: bool = False


@dataclass(frozen=True)
class ScriptedReply:
    """One successful scripted reply: tool calls or a final answer, plus usage when the scenario gives it."""

    response_id: str
    tool_calls: tuple[IssuedToolCall, ...]
    text: str | None
    usage: Usage | None


@dataclass(frozen=True)
class Played:
    """One scripted step as a delivery renders it for the harness: the reply's text and native tool calls, the
    calls whose commands are expected to run, and the answer when the step ends the script."""

    text: str | None
    # The calls that run a command: each is witnessed as a `tool_call` and gates the script (result, marker).
    calls: tuple[IssuedToolCall, ...]
    answer: str | None
    # The tool calls the reply carries natively: `calls` plus a finish-tool call, or none for a text delivery.
    wire_calls: tuple[IssuedToolCall, ...] = ()
    # False when the harness must be sent the same step again (Terminus confirms its `task_complete`).
    consumes_step: bool = True


@dataclass(frozen=True)
class Refusal:
    """A step the request gives no way to deliver: the violation code and its detail."""

    code: str
    detail: str


@dataclass(frozen=True)
class RenderedReply:
    """A reply encoded for the wire, and the facts the witness records about it."""

    content_type: str
    body: bytes
    # The logical JSON reply; for a stream, the complete object the events encode.
    response: Mapping[str, Any]
    sse_events: tuple[str, ...] | None
    # For a stream, the encoded bytes of each event in `sse_events` (body == b"".join(frames)), so a
    # timed reply can send, pace or cut the stream event by event.
    frames: tuple[bytes, ...] | None
    response_id: str
    finish_reason: str | None
    # Usage as carried on the wire (None when the reply carried none).
    usage: Usage | None


def rendered_reply(
    response: Mapping[str, Any],
    events: Sequence[tuple[str, str | None]] | None,
    response_id: str,
    finish_reason: str | None,
    usage: Usage | None,
) -> RenderedReply:
    """`response` on the wire: as one JSON body, or (`events` given: each event's data and optional `event:` name)
    as the SSE stream of those events."""
    if events is None:
        return RenderedReply(
            content_type=JSON_CONTENT_TYPE,
            body=compact_json(response).encode("utf-8"),
            response=response,
            sse_events=None,
            frames=None,
            response_id=response_id,
            finish_reason=finish_reason,
            usage=usage,
        )
    frames = tuple(sse.encode_event(data, event=name) for data, name in events)
    return RenderedReply(
        content_type=sse.CONTENT_TYPE,
        body=b"".join(frames),
        response=response,
        sse_events=tuple(data for data, _ in events),
        frames=frames,
        response_id=response_id,
        finish_reason=finish_reason,
        usage=usage,
    )


class Codec(Protocol):
    """One provider protocol: parses its requests and renders scripted replies and errors."""

    protocol: str

    def parse_request(self, body: Mapping[str, Any]) -> ModelRequest: ...

    def new_response_id(self) -> str: ...

    def new_tool_call_id(self) -> str: ...

    def render_reply(self, reply: ScriptedReply, request: ModelRequest, model: str, created: int) -> RenderedReply: ...

    def error_body(self, status: int, message: str, error_type: str, code: str) -> dict[str, Any]: ...
