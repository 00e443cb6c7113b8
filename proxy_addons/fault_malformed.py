"""`sse_malformed`: a stream in which one event's data is not valid JSON (its first half only), the rest of the stream
as it was, to its normal end: not a cut. The event is one no part of the reply can be had without: in Chat and
Messages a delta in the middle (nothing else carries its piece); in Responses, whose other events repeat every piece
(`output_item.done`, `response.completed`), the terminal `response.completed` itself, without which the response
never completed; in Gemini, whose events each carry a part of their own, a middle one. A JSON reply gets its body with a
middle piece missing."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace

from proxy_addons.fault_shapes import AlteredReply
from proxy_addons.protocol import RenderedReply


def _middle(rendered: RenderedReply) -> int:
    """A delta carrying part of the text or of the arguments (Chat, Messages)."""
    assert rendered.frames is not None
    return len(rendered.frames) // 2


def _last(rendered: RenderedReply) -> int:
    """The terminal event (Responses `response.completed`)."""
    assert rendered.frames is not None
    return len(rendered.frames) - 1


def _broken_stream(rendered: RenderedReply, index: int) -> AlteredReply:
    assert rendered.frames is not None and rendered.sse_events is not None
    data = rendered.sse_events[index]
    broken = data[: len(data) // 2]
    frame = rendered.frames[index]
    # Every payload is one compact JSON line: the frame is its optional `event:` line, `data: `, the payload and the
    # protocol's own line endings (Gemini's are CRLF), kept as they were.
    start = frame.index(b"data: ") + len(b"data: ")
    ending = frame[len(frame.rstrip(b"\r\n")) :]
    frames = (*rendered.frames[:index], frame[:start] + broken.encode("utf-8") + ending, *rendered.frames[index + 1 :])
    events = (*rendered.sse_events[:index], broken, *rendered.sse_events[index + 1 :])
    altered = replace(rendered, body=b"".join(frames), frames=frames, sse_events=events)
    return AlteredReply(altered, {"malformed_event": index}, usable=False)


def _broken_body(rendered: RenderedReply) -> AlteredReply:
    body = rendered.body
    start, end = len(body) * 9 // 20, len(body) * 11 // 20
    broken = body[:start] + body[end:]
    try:
        json.loads(broken)
    except ValueError:
        pass
    else:  # pragma: no cover - a JSON object missing its middle tenth does not parse
        broken = body[: len(body) // 2]
    played = {"removed_bytes": [start, end]}
    return AlteredReply(replace(rendered, body=broken), played, usable=False)


def _malformed(which: Callable[[RenderedReply], int]) -> Callable[[RenderedReply], AlteredReply]:
    def render(rendered: RenderedReply) -> AlteredReply:
        return _broken_stream(rendered, which(rendered)) if rendered.frames is not None else _broken_body(rendered)

    return render


RENDER: dict[str, Callable[[RenderedReply], AlteredReply]] = {
    "chat": _malformed(_middle),
    "responses": _malformed(_last),
    "messages": _malformed(_middle),
    "gemini": _malformed(_middle),
}
