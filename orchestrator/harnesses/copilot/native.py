"""Reads what Copilot CLI itself wrote (its session's event log, the stdout event stream, the usage file)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.harnesses.base import NormalizeError
from orchestrator.harnesses.jsonl import json_reason, loads_line
from orchestrator.harnesses.values import nonempty

__all__ = ["PROBE_NAME", "SESSIONS", "STREAM_NAME", "USAGE_NAME", "CopilotNative", "Event", "read_native"]

# Folder names under native/: COPILOT_HOME's session-state (and logs, not read), and our own folder for the
# redirected stdout and the usage file.
SESSIONS = "session-state"
PROBE_NAME = ".copilot-probe"
STREAM_NAME = "stream.jsonl"
USAGE_NAME = "usage.json"
EVENTS_NAME = "events.jsonl"


@dataclass(frozen=True)
class Event:
    """One session event as Copilot wrote it: `{type, data, id, timestamp, parentId, ephemeral?}`."""

    type: str
    data: dict[str, Any]
    timestamp: str | None

    def text(self, key: str) -> str | None:
        return nonempty(self.data.get(key))

    @property
    def main(self) -> bool:
        """Whether the session's own agent loop wrote it: a sub-agent's events carry the tool call that started it."""
        return "parentToolCallId" not in self.data


@dataclass
class CopilotNative:
    session_id: str
    # The session's own event log (session-state/<id>/events.jsonl): what Copilot persists.
    session: list[Event]
    # The `--output-format json` stdout stream: the persisted events and the ephemeral ones (model.call_start,
    # model.call_failure, model.call_finished, assistant.turn_retry), ending in a `result` line.
    stream: list[Event]
    usage: dict[str, Any] | None  # the --usage-output-file JSON: the session's final usage figures
    problems: list[tuple[str, str]] = field(default_factory=list)  # (gap code, detail) found while reading

    @property
    def start(self) -> Event | None:
        return next((e for e in self.session if e.type == "session.start"), None)

    @property
    def result(self) -> Event | None:
        """The stream's last `result` line: how the prompt-mode run ended (exit code, session id)."""
        found = [e for e in self.stream if e.type == "result"]
        return found[-1] if found else None


def read_native(native_dir: Path) -> CopilotNative:
    """native/ -> CopilotNative; NormalizeError when no session event log of this run can be told."""
    problems: list[tuple[str, str]] = []
    stream_path = native_dir / PROBE_NAME / STREAM_NAME
    stream: list[Event] = []
    if stream_path.is_file():
        stream = _read_events(stream_path, f"{PROBE_NAME}/{STREAM_NAME}", "stream", problems)
    else:
        problems.append(("native.stream_missing", f"{PROBE_NAME}/{STREAM_NAME} (the stdout event stream) is missing"))
    folder = native_dir / SESSIONS
    logs = sorted(folder.glob(f"*/{EVENTS_NAME}")) if folder.is_dir() else []
    if not logs:
        raise NormalizeError(f"Copilot wrote no session event log ({SESSIONS}/<session>/{EVENTS_NAME} missing)")
    path = _this_session(logs, _stream_session(stream))
    rel = path.relative_to(native_dir).as_posix()
    session = _read_events(path, rel, "session", problems)
    if not any(e.type == "session.start" for e in session):
        raise NormalizeError(f"{rel} holds no session.start event")
    for other in logs:
        if other != path:
            problems.append(("native.other_session_ignored", f"{other.parent.name} is not this run's session"))
    return CopilotNative(path.parent.name, session, stream, _usage(native_dir, problems), problems)


def _stream_session(stream: list[Event]) -> str | None:
    for e in reversed(stream):
        sid = nonempty(e.data.get("sessionId"))
        if e.type == "result" and sid:
            return sid
    return None


def _this_session(logs: list[Path], session: str | None) -> Path:
    # The stream's result line names the session it ran; without one, only a single session will do.
    if session is not None:
        for p in logs:
            if p.parent.name == session:
                return p
    if len(logs) == 1:
        return logs[0]
    names = ", ".join(p.parent.name for p in logs)
    raise NormalizeError(f"several session event logs ({names}) and no stdout result line naming this run's")


def _read_events(path: Path, rel: str, what: str, problems: list[tuple[str, str]]) -> list[Event]:
    """Every event line; a cut-off last line or a corrupt line is skipped and named, never fatal."""
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        raise NormalizeError(f"{rel} cannot be read: {exc}") from None
    lines = text.split("\n")
    events: list[Event] = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = loads_line(line)
        except (ValueError, RecursionError) as exc:  # ValueError: JSONDecodeError, or an integer too long to convert
            # Copilot appends whole lines, each ending in a newline: an unterminated last line was cut off.
            cut = n == len(lines)
            code = f"native.{what}_truncated" if cut else f"native.{what}_corrupt_line"
            problems.append((code, f"{rel} line {n}: not JSON ({json_reason(exc)})"))
            continue
        kind = value.get("type") if isinstance(value, dict) else None
        if not isinstance(kind, str):
            problems.append((f"native.{what}_corrupt_line", f"{rel} line {n}: not an event with a type"))
            continue
        # The stream's closing `result` line keeps its fields at the top level, not under `data`.
        data = value.get("data") if kind != "result" else value
        events.append(Event(kind, data if isinstance(data, dict) else {}, nonempty(value.get("timestamp"))))
    return events


def _usage(native_dir: Path, problems: list[tuple[str, str]]) -> dict[str, Any] | None:
    path = native_dir / PROBE_NAME / USAGE_NAME
    if not path.is_file():
        # Copilot writes the file when the session ends: a run killed before that has none.
        problems.append(("native.usage_file_missing", f"{PROBE_NAME}/{USAGE_NAME} (--usage-output-file) is missing"))
        return None
    try:
        value = loads_line(path.read_bytes().decode("utf-8", errors="replace"))
    except (OSError, ValueError, RecursionError) as exc:
        problems.append(("native.usage_file_unreadable", f"{PROBE_NAME}/{USAGE_NAME}: {exc}"))
        return None
    if not isinstance(value, dict):
        problems.append(("native.usage_file_unreadable", f"{PROBE_NAME}/{USAGE_NAME} is not a JSON object"))
        return None
    return value
