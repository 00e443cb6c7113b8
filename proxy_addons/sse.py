"""Server-sent-events framing: turns event payloads into the bytes of a `text/event-stream` body."""

from __future__ import annotations

from collections.abc import Iterable

CONTENT_TYPE = "text/event-stream"


def encode_event(data: str, event: str | None = None) -> bytes:
    """One SSE event: an optional `event:` line, one `data:` line per payload line, a blank line."""
    lines = [f"event: {event}"] if event is not None else []
    # A payload line break would end the field early; SSE carries multi-line data as repeated fields.
    lines.extend(f"data: {line}" for line in data.split("\n"))
    return ("\n".join(lines) + "\n\n").encode("utf-8")


def encode_data_events(payloads: Iterable[str]) -> bytes:
    """A body of data-only events (the Chat Completions framing)."""
    return b"".join(encode_event(payload) for payload in payloads)
