"""Reads what Pi itself wrote (session JSONL files, and the settings it ran with) into plain typed records."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.harnesses.base import NormalizeError
from orchestrator.harnesses.jsonl import json_reason, loads_line
from orchestrator.harnesses.values import integer, string

__all__ = ["Entry", "PiNative", "Session", "read_native"]

SESSIONS_DIR = Path(".pi-probe") / "sessions"
SETTINGS = Path("agent") / "settings.json"


@dataclass(frozen=True)
class Entry:
    """One tree entry of a session file (message, model_change, compaction, ...), as Pi wrote it."""

    id: str
    parent_id: str | None
    type: str
    timestamp: str | None  # ISO time Pi appended the entry (for a message: when it ended)
    data: dict[str, Any]  # the whole entry; for type `message`, data["message"] is the AgentMessage

    @property
    def message(self) -> dict[str, Any]:
        m = self.data.get("message")
        return m if isinstance(m, dict) else {}

    @property
    def role(self) -> str | None:
        r = self.message.get("role")
        return r if isinstance(r, str) else None


@dataclass
class Session:
    path: str  # relative to native/
    id: str
    timestamp: str | None
    cwd: str | None
    parent_session: str | None  # path of the session this one was forked from, as Pi wrote it
    entries: list[Entry] = field(default_factory=list)


@dataclass
class PiNative:
    sessions: list[Session]
    provider_max_retries: int | None  # retry.provider.maxRetries from settings.json; None: the SDK default
    problems: list[tuple[str, str]]  # (gap code, detail) for lines that were present but unreadable


def read_native(native_dir: Path) -> PiNative:
    """native/ -> the session files; NormalizeError when there is none or none has a readable header."""
    folder = native_dir / SESSIONS_DIR
    files = sorted(folder.rglob("*.jsonl")) if folder.is_dir() else []
    if not files:
        # Pi creates the file only once the first assistant message (reply or error) exists.
        raise NormalizeError("Pi wrote no session file (.pi-probe/sessions/*.jsonl missing in native/)")
    problems: list[tuple[str, str]] = []
    sessions = [_session(p, p.relative_to(native_dir).as_posix(), problems) for p in files]
    return PiNative(sessions, _provider_retries(native_dir / SETTINGS, problems), problems)


def _session(path: Path, rel: str, problems: list[tuple[str, str]]) -> Session:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise NormalizeError(f"{rel} is unreadable: {exc}") from None
    lines = text.split("\n")
    # A file that does not end in a newline was cut inside its last line (Pi appends whole lines).
    cut = lines.pop() if lines else ""
    if cut.strip():
        problems.append(("session.truncated", f"{rel}: the last line is incomplete ({len(cut)} bytes) and was skipped"))
    header = _json_line(lines[0] if lines else "", rel, 1, problems)
    if header is None or header.get("type") != "session" or not isinstance(header.get("id"), str):
        raise NormalizeError(f"{rel}: line 1 is not a Pi session header")
    session = Session(
        path=rel,
        id=header["id"],
        timestamp=string(header.get("timestamp")),
        cwd=string(header.get("cwd")),
        parent_session=string(header.get("parentSession")),
    )
    for n, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        data = _json_line(line, rel, n, problems)
        if data is None:
            continue
        eid, etype = data.get("id"), data.get("type")
        if not (isinstance(eid, str) and isinstance(etype, str)):
            problems.append(("session.entry_unreadable", f"{rel} line {n}: an entry without id or type"))
            continue
        session.entries.append(Entry(eid, string(data.get("parentId")), etype, string(data.get("timestamp")), data))
    return session


def _json_line(line: str, rel: str, n: int, problems: list[tuple[str, str]]) -> dict[str, Any] | None:
    try:
        data = loads_line(line)
    except ValueError as exc:  # JSONDecodeError, or an integer too long to convert
        problems.append(("session.entry_unreadable", f"{rel} line {n}: not JSON ({json_reason(exc)})"))
        return None
    if not isinstance(data, dict):
        problems.append(("session.entry_unreadable", f"{rel} line {n}: not a JSON object"))
        return None
    return data


def _provider_retries(path: Path, problems: list[tuple[str, str]]) -> int | None:
    # Pi's own settings as it ran: they say whether the provider SDK may retry out of Pi's sight.
    if not path.is_file():
        return None
    try:
        settings = loads_line(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # ValueError: not UTF-8, not JSON, or an integer too long to convert
        problems.append(("settings.unreadable", f"{SETTINGS}: {exc}"))
        return None
    retry = settings.get("retry") if isinstance(settings, dict) else None
    provider = retry.get("provider") if isinstance(retry, dict) else None
    return integer(provider.get("maxRetries")) if isinstance(provider, dict) else None
