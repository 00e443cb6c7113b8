"""Replies with time structure (delayed, withheld, cut) and how they ended on the wire, free of any server."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

# How a reply ended on the wire (the witness's `ended`).
COMPLETE = "complete"
WITHHELD = "withheld"
CUT = "cut"
RESET = "reset"


@dataclass(frozen=True)
class TimedReply:
    """A reply the streaming responder plays piece by piece, with real waits.

    The responder stays silent for `delay_seconds`, then (if `send_head`) sends the status line and
    headers and `preamble`, then the first `send_pieces` of `pieces` (all when None), then ends as
    `ending` says: `complete` finishes the message; `withheld` keeps the connection open and silent
    until the client leaves or `hold_seconds` pass; `cut` waits `hold_seconds` and closes the
    connection mid-message. A client that leaves early ends any of them.
    """

    status: int
    headers: Mapping[str, str]
    pieces: tuple[bytes, ...] = ()
    # Chunked framing sends each piece as one chunk; otherwise the body has a content-length.
    chunked: bool = False
    delay_seconds: float = 0.0
    send_head: bool = True
    preamble: bytes = b""
    send_pieces: int | None = None
    ending: str = COMPLETE
    hold_seconds: float = 0.0

    @property
    def pieces_to_send(self) -> int:
        return len(self.pieces) if self.send_pieces is None else min(self.send_pieces, len(self.pieces))


@dataclass(frozen=True)
class WireOutcome:
    """What actually crossed the wire for a timed reply."""

    ended: str
    # Status line sent, None when none was.
    status: int | None
    pieces_sent: int
    completed_at: str
    client_disconnected_at: str | None = None


@dataclass(frozen=True)
class TimedResponse:
    """The interpreter's answer for a timed reply: what to play and whom to tell how it ended.

    `finish` is called exactly once with the outcome; it writes the attempt to the witness.
    """

    reply: TimedReply
    finish: Callable[[WireOutcome], None]


@dataclass(frozen=True)
class ResetResponse:
    """The interpreter's answer when the connection must close with no reply at all (already witnessed)."""
