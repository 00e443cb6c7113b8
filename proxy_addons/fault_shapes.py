"""What a fault's per-protocol rendering produces, and the small helpers those renderings share.

Each fault kind that needs a reply of its own has a module (`fault_overloaded`, `fault_quota`, `fault_not_json`,
`fault_length`, `fault_arguments`, `fault_malformed`, `fault_error_event`) holding one function per provider protocol
in its `RENDER` table; a protocol added later adds its entry there and nowhere else.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from proxy_addons import sse
from proxy_addons.exchange import json_bytes
from proxy_addons.protocol import JSON_CONTENT_TYPE, RenderedReply, rendered_reply


@dataclass(frozen=True)
class ErrorShape:
    """A reply that stands in for the due step (an error status, or a 200 no client can use)."""

    status: int
    body: bytes
    # The body parsed (what the witness keeps as `response`); None when it is not JSON.
    response: Mapping[str, Any] | None
    headers: Mapping[str, str] = field(default_factory=lambda: {"content-type": JSON_CONTENT_TYPE})
    # What the witness records of how it was played (`played`): extra headers, the wait asked for, a non-JSON body.
    played: Mapping[str, Any] = field(default_factory=dict)


def json_error(status: int, body: Mapping[str, Any], headers: Mapping[str, str] | None = None) -> ErrorShape:
    """A JSON error body with `status`, plus `headers` (recorded in the witness as played when there are any)."""
    sent = {"content-type": JSON_CONTENT_TYPE, **(headers or {})}
    played: dict[str, Any] = {"headers": dict(headers)} if headers else {}
    return ErrorShape(status, json_bytes(body), body, sent, played)


def anthropic_request_id() -> str:
    """An id in the form Anthropic puts in `request_id` and the `request-id` header."""
    return f"req_{uuid.uuid4().hex[:24]}"


@dataclass(frozen=True)
class AlteredReply:
    """The due step's reply as a fault altered it, and what the witness records of that."""

    rendered: RenderedReply
    played: Mapping[str, Any]
    # Whether a client can take the reply as a turn (a reply cut at the token limit can; a broken stream cannot).
    usable: bool
    # The final-answer text the reply now carries (a text cut at the token limit), when it differs from the step's.
    answer: str | None = None
    # Tool-call id -> the arguments text as sent, for calls whose arguments are no longer JSON.
    cut_arguments: Mapping[str, str] = field(default_factory=dict)
    # Calls the reply dropped whole, no part of them sent: Gemini's API never sends a call it could not parse or that
    # the token limit cut (it ends the candidate MALFORMED_FUNCTION_CALL or MAX_TOKENS instead).
    dropped_calls: tuple[str, ...] = ()


# (rendered reply of the due step) -> the altered reply: one function per protocol in each step fault's RENDER.
AlterFn = Callable[[RenderedReply], AlteredReply]
# SSE events as (data, event name) pairs.
EventList = Sequence[tuple[str, str | None]]
# How one event is framed: the SSE default (LF-ended, an optional `event:` line), or a protocol's own (Gemini's CRLF).
Framing = Callable[[str, str | None], bytes]


def sse_frame(data: str, event: str | None) -> bytes:
    return sse.encode_event(data, event=event)


def half(text: str) -> str:
    """The first half of `text` (at least one character when it has any)."""
    return text[: max(1, len(text) // 2)] if text else text


def unterminated(arguments: str) -> str:
    """Arguments JSON with its last two characters cut: the closing of the command string and of the object, so a
    parser that repairs JSON would recover the whole command, and one that does not cannot parse it at all."""
    return arguments[:-2] if len(arguments) > 2 else arguments[:1]


def restreamed(
    rendered: RenderedReply, response: Mapping[str, Any], events: EventList, finish_reason: str | None
) -> RenderedReply:
    """`response` put on the wire as `rendered` was: JSON, or (a stream) the SSE `events`; with its finish reason."""
    stream = events if rendered.sse_events is not None else None
    return rendered_reply(response, stream, rendered.response_id, finish_reason, rendered.usage)


def raw_body(rendered: RenderedReply, body: bytes, response: Mapping[str, Any]) -> RenderedReply:
    """`rendered` with its body replaced by bytes that are not the JSON of `response` (kept as the logical reply)."""
    return replace(rendered, body=body, response=response, frames=None, sse_events=None)


def frames_of(events: EventList, framing: Framing = sse_frame) -> tuple[tuple[bytes, ...], tuple[str, ...]]:
    """Encoded SSE frames and their data payloads."""
    return tuple(framing(data, name) for data, name in events), tuple(data for data, _ in events)


def stream_of(
    rendered: RenderedReply,
    keep: int,
    extra: EventList,
    response: Mapping[str, Any] | None,
    framing: Framing = sse_frame,
) -> RenderedReply:
    """`rendered`'s stream: its first `keep` events as they were, then `extra`; `response` is its logical reply."""
    assert rendered.frames is not None and rendered.sse_events is not None
    frames, payloads = frames_of(extra, framing)
    kept_frames = rendered.frames[:keep] + frames
    return replace(
        rendered,
        body=b"".join(kept_frames),
        frames=kept_frames,
        sse_events=rendered.sse_events[:keep] + payloads,
        response=response if response is not None else rendered.response,
    )


__all__ = [
    "AlterFn",
    "AlteredReply",
    "ErrorShape",
    "EventList",
    "Framing",
    "anthropic_request_id",
    "frames_of",
    "half",
    "json_error",
    "raw_body",
    "restreamed",
    "sse_frame",
    "stream_of",
    "unterminated",
]
