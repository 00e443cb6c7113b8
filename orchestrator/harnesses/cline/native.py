"""Reads what Cline itself wrote (the `--json` event stream, its session files under --data-dir) into plain records."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.evidence.jsonread import JsonFault, loads, read_bytes
from orchestrator.harnesses.base import NormalizeError
from orchestrator.harnesses.values import string

__all__ = ["EVENTS", "SESSIONS", "ClineNative", "Session", "read_native"]

PROBE = Path(".cline-probe")  # PROBE_DIR as copied into native/
EVENTS = PROBE / "events.jsonl"  # `cline --json` stdout: one NDJSON event a line
SESSIONS = PROBE / "data" / "sessions"  # <id>/<id>.json (the session's manifest) and <id>/<id>.messages.json


@dataclass
class Session:
    """One session Cline stored: its manifest (status, provider, parent) and its message history."""

    id: str
    manifest: dict[str, Any]
    messages: list[dict[str, Any]] = field(default_factory=list)
    system_prompt: str | None = None

    @property
    def parent(self) -> str | None:
        return string(self.manifest.get("parent_session_id"))


@dataclass
class ClineNative:
    events: list[dict[str, Any]]  # the stream's events in order (lines that were not JSON objects left out)
    sessions: list[Session]  # in the order of their start; the root (no parent) first
    problems: list[tuple[str, str]]  # (gap code, detail) for records that were present but unreadable

    @property
    def root(self) -> Session | None:
        return next((s for s in self.sessions if s.parent is None), None)


def read_native(native_dir: Path) -> ClineNative:
    """native/ -> the event stream and the stored sessions; NormalizeError when Cline left neither."""
    problems: list[tuple[str, str]] = []
    events = _events(native_dir / EVENTS, problems)
    folder = native_dir / SESSIONS
    dirs = sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []
    sessions = [s for s in (_session(d, problems) for d in dirs) if s is not None]
    if not events and not sessions:
        raise NormalizeError(f"Cline left no event stream ({EVENTS}) and no session ({SESSIONS}/*) in native/")
    sessions.sort(key=lambda s: (s.parent is not None, string(s.manifest.get("started_at")) or "", s.id))
    return ClineNative(events, sessions, problems)


def _events(path: Path, problems: list[tuple[str, str]]) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    try:
        text = read_bytes(path).decode("utf-8")
    except (OSError, UnicodeDecodeError, JsonFault) as exc:
        problems.append(("events.unreadable", f"{EVENTS}: {exc}"))
        return []
    lines = text.split("\n")
    # A stream that does not end in a newline was cut inside its last line (the run was killed mid-write).
    cut = lines.pop() if lines else ""
    if cut.strip():
        problems.append(("events.truncated", f"{EVENTS}: the last line is incomplete ({len(cut)} bytes), skipped"))
    out: list[dict[str, Any]] = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            event = loads(line)
        except JsonFault as exc:
            problems.append(("events.line_unreadable", f"{EVENTS} line {n}: {exc}"))
            continue
        if isinstance(event, dict):
            out.append(event)
        else:
            problems.append(("events.line_unreadable", f"{EVENTS} line {n}: not a JSON object"))
    return out


def _session(folder: Path, problems: list[tuple[str, str]]) -> Session | None:
    rel = f"{SESSIONS}/{folder.name}"
    manifest = _object(folder / f"{folder.name}.json", f"{rel}/{folder.name}.json", problems)
    if manifest is None:
        return None
    session = Session(id=string(manifest.get("session_id")) or folder.name, manifest=manifest)
    stored = _object(folder / f"{folder.name}.messages.json", f"{rel}/{folder.name}.messages.json", problems)
    if stored is None:
        return session
    messages = stored.get("messages")
    if isinstance(messages, list):
        session.messages = [m for m in messages if isinstance(m, dict)]
        if len(session.messages) < len(messages):
            problems.append(("session.message_unreadable", f"{rel}: a stored message is not a JSON object"))
    else:
        problems.append(("session.messages_unreadable", f"{rel}: the messages file holds no message list"))
    session.system_prompt = string(stored.get("system_prompt"))
    return session


def _object(path: Path, rel: str, problems: list[tuple[str, str]]) -> dict[str, Any] | None:
    if not path.is_file():
        problems.append(("session.file_missing", f"{rel} is missing"))
        return None
    try:
        value = loads(read_bytes(path))
    except (OSError, JsonFault) as exc:
        problems.append(("session.file_unreadable", f"{rel}: {exc}"))
        return None
    if not isinstance(value, dict):
        problems.append(("session.file_unreadable", f"{rel}: not a JSON object"))
        return None
    return value
