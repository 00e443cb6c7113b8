"""`error_event`: a 200 stream that reports an error after some content, in each protocol's form: a Chat chunk
carrying `error` (no `[DONE]`), Responses `response.failed`, Anthropic `event: error`, Gemini a `data:` event holding
Google's error object (`{"error": {code, message, status}}`, which google-genai raises as an APIError of that code).
A JSON reply is a 200 whose body is that error (Chat `{"error": ...}`, a failed response object, Anthropic's error
object, Google's)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from proxy_addons.exchange import json_bytes
from proxy_addons.fault_shapes import AlteredReply, Framing, raw_body, sse_frame, stream_of
from proxy_addons.gemini import gemini_frame
from proxy_addons.protocol import RenderedReply, compact_json

SERVER_ERROR_MESSAGE = "The server had an error while processing your request. Sorry about that!"
GEMINI_INTERNAL_MESSAGE = "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"


def _kept(rendered: RenderedReply) -> int:
    """Events sent before the error: the first half, so some content has arrived."""
    assert rendered.frames is not None
    return len(rendered.frames) // 2


def _alter(
    rendered: RenderedReply,
    error: Mapping[str, Any],
    event: tuple[str, str | None] | None,
    framing: Framing = sse_frame,
) -> AlteredReply:
    played: dict[str, Any] = {"error": dict(error)}
    if rendered.frames is None or event is None:
        return AlteredReply(raw_body(rendered, json_bytes(error), error), played, usable=False)
    keep = _kept(rendered)
    played["error_event"] = keep
    return AlteredReply(stream_of(rendered, keep, [event], error, framing), played, usable=False)


def _chat(rendered: RenderedReply) -> AlteredReply:
    error = {"error": {"message": SERVER_ERROR_MESSAGE, "type": "server_error", "param": None, "code": None}}
    return _alter(rendered, error, (compact_json(error), None))


def _responses(rendered: RenderedReply) -> AlteredReply:
    failed = {
        **rendered.response,
        "status": "failed",
        "error": {"code": "server_error", "message": SERVER_ERROR_MESSAGE},
        "incomplete_details": None,
        "output": [],
        "usage": None,
    }
    event = None
    if rendered.frames is not None:
        event_body = {"type": "response.failed", "response": failed, "sequence_number": _kept(rendered)}
        event = (compact_json(event_body), "response.failed")
    return _alter(rendered, failed, event)


def _messages(rendered: RenderedReply) -> AlteredReply:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    return _alter(rendered, error, (compact_json(error), "error"))


def _gemini(rendered: RenderedReply) -> AlteredReply:
    error = {"error": {"code": 500, "message": GEMINI_INTERNAL_MESSAGE, "status": "INTERNAL"}}
    return _alter(rendered, error, (compact_json(error), None), lambda data, _: gemini_frame(data))


RENDER: dict[str, Callable[[RenderedReply], AlteredReply]] = {
    "chat": _chat,
    "responses": _responses,
    "messages": _messages,
    "gemini": _gemini,
}
