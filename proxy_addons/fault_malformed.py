"""`sse_malformed`: a stream in which one event's data is not valid JSON (its first half only), the rest of the stream
as it was, to its normal end: not a cut. A JSON reply gets its body with a middle piece missing."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace

from proxy_addons.fault_shapes import AlteredReply
from proxy_addons.protocol import RenderedReply


def _broken_stream(rendered: RenderedReply) -> AlteredReply:
    assert rendered.frames is not None and rendered.sse_events is not None
    # The middle event: a delta carrying part of the text or of the arguments, in every protocol's stream.
    index = len(rendered.frames) // 2
    data = rendered.sse_events[index]
    broken = data[: len(data) // 2]
    frame = rendered.frames[index]
    # Every payload is one compact JSON line: the frame is its optional `event:` line, `data: ` and the payload.
    start = frame.index(b"data: ") + len(b"data: ")
    frames = (*rendered.frames[:index], frame[:start] + broken.encode("utf-8") + b"\n\n", *rendered.frames[index + 1 :])
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


def _malformed(rendered: RenderedReply) -> AlteredReply:
    return _broken_stream(rendered) if rendered.frames is not None else _broken_body(rendered)


# The same breakage in every protocol: what breaks is the framing, not the protocol's vocabulary.
RENDER: dict[str, Callable[[RenderedReply], AlteredReply]] = {
    "chat": _malformed,
    "responses": _malformed,
    "messages": _malformed,
}
