"""Reads what Codex itself wrote (its rollout JSONL and its `exec --json` stdout events) into plain records."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator import records
from orchestrator.harnesses.base import NormalizeError
from orchestrator.harnesses.jsonl import loads_line
from orchestrator.harnesses.values import count
from orchestrator.records import TokenStats, token_stats

__all__ = ["EVENTS_NAME", "Gap", "Line", "NativeLog", "read_native", "tokens"]

# Where the launch redirects `codex exec --json` stdout, relative to native/ (the probe folder is copied whole).
EVENTS_NAME = ".codex-probe/events.jsonl"
# Copied from $CODEX_HOME/sessions: YYYY/MM/DD/rollout-<time>-<thread id>.jsonl below it.
ROLLOUT_GLOB = "sessions/*/*/*/rollout-*.jsonl"


@dataclass(frozen=True)
class Gap:
    code: str
    detail: str
    labels: tuple[str, ...] = ()

    def to_json(self) -> records.Gap:
        return records.gap(self.code, self.detail, list(self.labels) if self.labels else None)


@dataclass(frozen=True)
class Line:
    """One rollout record `{timestamp, type, payload}`; `n` is its 1-based line number in the file."""

    n: int
    timestamp: str | None
    type: str
    payload: dict[str, Any]


@dataclass
class NativeLog:
    rollout_name: str
    lines: list[Line]
    events: list[dict[str, Any]] | None  # stdout events in order; None when the file was not collected
    gaps: list[Gap] = field(default_factory=list)

    @property
    def meta(self) -> dict[str, Any]:
        """The session_meta payload (read_native guarantees there is one)."""
        return next(ln.payload for ln in self.lines if ln.type == "session_meta")


def read_native(native_dir: Path) -> NativeLog:
    """native/ -> the rollout's records and the stdout events; NormalizeError when there is no usable rollout."""
    files = sorted(native_dir.glob(ROLLOUT_GLOB))
    if not files:
        raise NormalizeError("Codex wrote no rollout (no sessions/YYYY/MM/DD/rollout-*.jsonl in native/)")
    gaps: list[Gap] = []
    event_gaps: list[Gap] = []
    events = _events(native_dir / EVENTS_NAME, event_gaps)
    thread = _stdout_thread(events)
    chosen = next((f for f in files if thread is not None and f.stem.endswith(f"-{thread}")), None)
    if chosen is None:  # stdout names no thread, or none of the files: today's order
        chosen = files[0]
    others = [f for f in files if f != chosen]
    if others:
        # `codex exec` records one thread; more files would be sub-agent threads (or another run's), which this
        # normalizer does not read.
        names = ", ".join(f.name for f in others)
        gaps.append(Gap("invocations.unread_rollouts", f"rollout files not normalized: {names}", ("E8",)))
    lines = _rollout_lines(chosen, gaps)
    if not any(ln.type == "session_meta" for ln in lines):
        raise NormalizeError(f"{chosen.name} has no readable session_meta record: not a Codex rollout")
    gaps.extend(event_gaps)
    return NativeLog(chosen.name, lines, events, gaps)


def _stdout_thread(events: list[dict[str, Any]] | None) -> str | None:
    """The thread id `codex exec --json` announced (`thread.started`), or None."""
    for e in events or []:
        if e.get("type") == "thread.started":
            tid = e.get("thread_id")
            if isinstance(tid, str) and tid:
                return tid
    return None


def _rollout_lines(path: Path, gaps: list[Gap]) -> list[Line]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise NormalizeError(f"rollout {path.name} cannot be read: {exc}") from None
    chunks = raw.split(b"\n")
    out: list[Line] = []
    for n, chunk in enumerate(chunks, start=1):
        if not chunk.strip():
            continue
        record = _json(chunk)
        if isinstance(record, dict) and isinstance(record.get("type"), str) and isinstance(record.get("payload"), dict):
            stamp = record.get("timestamp")
            out.append(Line(n, stamp if isinstance(stamp, str) else None, record["type"], record["payload"]))
            continue
        # Codex appends one record per line and flushes it: a kill mid-write leaves a last line without its newline.
        if n == len(chunks) and not raw.endswith(b"\n"):
            gaps.append(Gap("rollout.truncated", f"{path.name}: the last line (line {n}) is cut off and was skipped"))
        else:
            gaps.append(Gap("rollout.corrupt_line", f"{path.name}: line {n} is not a rollout record and was skipped"))
    if not out:
        raise NormalizeError(f"{path.name} holds no readable rollout record (empty, truncated or corrupt)")
    return out


def _events(path: Path, gaps: list[Gap]) -> list[dict[str, Any]] | None:
    if not path.is_file():
        gaps.append(
            Gap(
                "model_calls.stdout_events_missing",
                f"{path.name} was not collected: the stream-retry records Codex prints only there are unavailable",
                ("E1", "E7"),
            )
        )
        return None
    out = []
    for n, chunk in enumerate(path.read_bytes().split(b"\n"), start=1):
        if not chunk.strip():
            continue
        event = _json(chunk)
        if isinstance(event, dict) and isinstance(event.get("type"), str):
            out.append(event)
        else:
            gaps.append(Gap("events.corrupt_line", f"{path.name}: line {n} is not a JSON event and was skipped"))
    return out


def _json(chunk: bytes) -> Any:
    try:
        return loads_line(chunk.decode("utf-8"))
    except ValueError:  # not UTF-8, not JSON, or an integer too long to convert (each a ValueError)
        return None


def tokens(usage: Any) -> TokenStats:
    """A Responses usage object (as Codex recorded it) as token_stats; what it lacks stays unknown."""
    u = usage if isinstance(usage, dict) else {}
    return token_stats(
        prompt=count(u.get("input_tokens")),
        completion=count(u.get("output_tokens")),
        reasoning=count(u.get("reasoning_output_tokens")),
        total=count(u.get("total_tokens")),
        cached=count(u.get("cached_input_tokens")),
    )
