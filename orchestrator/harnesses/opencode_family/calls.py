"""The model request attempts of one assistant message of OpenCode or a fork, from its parts and request log lines."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from orchestrator.harnesses.opencode_family.store import LogLine, Message, Part
from orchestrator.harnesses.values import integer
from orchestrator.records import TokenStats, token_stats

__all__ = ["PROTOCOL_NAMES", "Attempt", "attempts_of", "iso_ms", "obj", "segments", "tokens", "wire_finish"]

PROTOCOL_NAMES = {"chat": "Chat Completions", "responses": "Responses", "messages": "Anthropic Messages"}
# The AI SDK's unified finish reasons -> per protocol, the wire value each is made from (its providers' finish
# reason mappings). A Responses reply ends `completed` whether it calls tools or not.
_FINISH = {
    "chat": {"stop": "stop", "tool-calls": "tool_calls", "length": "length", "content-filter": "content_filter"},
    "responses": {
        "stop": "completed",
        "tool-calls": "completed",
        "length": "incomplete",
        "content-filter": "incomplete",
    },
    "messages": {"stop": "end_turn", "tool-calls": "tool_use", "length": "max_tokens"},
}


@dataclass
class Segment:
    """The parts of one streamed reply: from its `step-start` to its `step-finish` (absent if it never ended)."""

    start: Part
    parts: list[Part] = field(default_factory=list)
    finish: Part | None = None


@dataclass
class Attempt:
    started: int | datetime | None
    segment: Segment | None = None
    errors: list[LogLine] = field(default_factory=list)  # `stream error` lines while this was the latest request


def segments(m: Message) -> list[Segment]:
    """A message's parts cut at each `step-start`: OpenCode begins one whenever a reply starts to stream."""
    out: list[Segment] = []
    for p in m.parts:
        if p.type == "step-start":
            out.append(Segment(p))
        elif out and out[-1].finish is None:
            if p.type == "step-finish":
                out[-1].finish = p
            else:
                out[-1].parts.append(p)
    return out


def attempts_of(m: Message, log: list[LogLine]) -> list[Attempt]:
    """One attempt per request OpenCode logged for this message; without a log, one per reply it streamed."""
    mine = [ln for ln in log if ln.message_id == m.id and not ln.small]
    starts = [ln for ln in mine if ln.message == "stream"]
    segs = segments(m)
    if not starts or len(starts) < len(segs):
        created = integer(obj(m.data.get("time")).get("created"))
        return [Attempt(seg.start.created, seg) for seg in segs] or [Attempt(created)]
    attempts = [Attempt(ln.at) for ln in starts]
    for seg in segs:
        # A reply streams after its request was sent: it belongs to the last request sent before it.
        sent = [a for a in attempts if seg.start.created is None or _epoch_ms(_dt(a.started)) <= seg.start.created]
        (sent[-1] if sent else attempts[0]).segment = seg
    for ln in mine:
        if ln.message == "stream error":
            sent = [a for a in attempts if _dt(a.started) <= ln.at]
            (sent[-1] if sent else attempts[0]).errors.append(ln)
    return attempts


def tokens(raw: Any) -> TokenStats:
    """OpenCode's token record, turned back into the counts the reply carried.

    OpenCode stores input without cache reads and writes, and output without reasoning (its session usage code),
    the split Anthropic sends; a sum with an unrecorded part is unknown, never smaller.
    """
    t = obj(raw)
    cache = obj(t.get("cache"))
    inp, out, reasoning = integer(t.get("input")), integer(t.get("output")), integer(t.get("reasoning"))
    read, write = integer(cache.get("read")), integer(cache.get("write"))
    prompt = None if inp is None or read is None or write is None else inp + read + write
    completion = None if out is None or reasoning is None else out + reasoning
    return token_stats(
        prompt=prompt, completion=completion, reasoning=reasoning, total=integer(t.get("total")), cached=read
    )


def wire_finish(protocol: str, reason: Any) -> str | None:
    return _FINISH.get(protocol, {}).get(reason, reason) if isinstance(reason, str) else None


def iso_ms(value: int | datetime | None) -> str | None:
    at = _dt(value) if value is not None else None
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z") if at else None


def _dt(value: int | datetime | None) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return datetime.fromtimestamp((value or 0) / 1000, UTC)


def _epoch_ms(at: datetime) -> int:
    return int(_dt(at).timestamp() * 1000)


def obj(value: Any) -> dict[str, Any]:
    """The value if it is a JSON object, else an empty one: OpenCode's rows are read defensively."""
    return value if isinstance(value, dict) else {}
