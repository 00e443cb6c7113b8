"""Reads what OpenCode or a fork that kept its store wrote (its SQLite store through a read-only copy, and its log)
into plain typed records."""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from orchestrator.harnesses.base import NormalizeError
from orchestrator.harnesses.jsonl import loads_line
from orchestrator.harnesses.sqlite_store import readonly_copy
from orchestrator.harnesses.values import string

__all__ = ["STDERR_LOG", "Layout", "LogLine", "Message", "OpenCodeNative", "Part", "Session", "read_native"]

STDERR_LOG = "stderr.log"  # `--print-logs` output: the whole log, where log/*.log loses its last lines
_LOGFMT = re.compile(r'([\w.]+)=("(?:[^"\\]|\\.)*"|\S*)')


@dataclass(frozen=True)
class Layout:
    """Where one harness of the OpenCode family keeps its records, and the names its rollout gives them.

    A fork renames the folders and the database, never the tables, rows or log lines: those are what is shared.
    """

    harness: str  # the registered name: the rollout's harness name and its extensions key
    product: str  # the harness as gap details name it
    data: str  # its data folder ($XDG_DATA_HOME/<data>) as copied into native/
    probe: str  # our folder of its stdout and stderr, as copied into native/
    db: str  # its SQLite store in `data`; it writes through the WAL, so the last writes may be only there


@dataclass(frozen=True)
class Part:
    id: str
    created: int | None  # ms since the epoch, the row's time_created
    data: dict[str, Any]  # its `type` is text, tool, step-start, step-finish, reasoning, ...

    @property
    def type(self) -> str | None:
        t = self.data.get("type")
        return t if isinstance(t, str) else None


@dataclass
class Message:
    id: str
    session_id: str
    data: dict[str, Any]  # role, time{created, completed}, tokens, finish, error, ...
    parts: list[Part] = field(default_factory=list)

    @property
    def role(self) -> str | None:
        r = self.data.get("role")
        return r if isinstance(r, str) else None


@dataclass
class Session:
    id: str
    parent_id: str | None
    version: str | None  # the version of the harness that created the session
    messages: list[Message] = field(default_factory=list)


@dataclass(frozen=True)
class LogLine:
    """One line of OpenCode's log about a model request: `stream` (one is sent) or `stream error` (one failed)."""

    at: datetime
    message: str
    session_id: str | None
    message_id: str | None  # the assistant message OpenCode was processing (its latest `process` line)
    small: bool  # a request of the small model (titles, summaries), not of the agent loop
    error: str | None


@dataclass
class OpenCodeNative:
    sessions: list[Session]
    log: list[LogLine]
    problems: list[tuple[str, str]]  # (gap code, detail) for records that were present but unreadable


def read_native(native_dir: Path, layout: Layout) -> OpenCodeNative:
    """native/ -> sessions with messages and parts, plus request log lines; NormalizeError if the DB is unreadable."""
    data = native_dir / layout.data
    if not (data / layout.db).is_file():
        raise NormalizeError(f"{layout.product} wrote no database ({layout.data}/{layout.db} missing in native/)")
    problems: list[tuple[str, str]] = []
    _check_wal(data, layout.db, problems)
    with readonly_copy(data, layout.db, ("session", "message", "part")) as conn:
        sessions = _sessions(conn, problems)
    # The same lines are in both logs; the stderr copy is complete, the file the harness keeps is not flushed at exit.
    printed = native_dir / layout.probe / STDERR_LOG
    logs = [printed] if printed.is_file() else sorted((data / "log").glob("*.log"))
    return OpenCodeNative(list(sessions.values()), _log(logs, problems), problems)


def _check_wal(folder: Path, db: str, problems: list[tuple[str, str]]) -> None:
    """A WAL cut inside a frame still opens (SQLite keeps its valid frames), but the last writes are gone: named."""
    wal = folder / f"{db}-wal"
    if not wal.is_file() or wal.stat().st_size == 0:
        return
    header = (folder / db).read_bytes()[:18]
    size = int.from_bytes(header[16:18], "big") if len(header) == 18 else 0
    page = 65536 if size == 1 else size
    if page and (wal.stat().st_size - 32) % (page + 24):
        problems.append(("store.wal_truncated", f"{wal.name} ends inside a frame ({wal.stat().st_size} bytes)"))


def _sessions(conn: sqlite3.Connection, problems: list[tuple[str, str]]) -> dict[str, Session]:
    sessions = {
        str(r["id"]): Session(str(r["id"]), string(r["parent_id"]), string(r["version"]))
        for r in conn.execute("SELECT id, parent_id, version FROM session ORDER BY time_created, id")
    }
    messages: dict[str, Message] = {}
    # Ids are OpenCode's ascending ids: their order is the order OpenCode created the rows in.
    for r in conn.execute("SELECT id, session_id, data FROM message ORDER BY id"):
        data = _json(r["data"], f"message {r['id']}", problems)
        sid = str(r["session_id"])
        if data is None:
            continue
        if sid not in sessions:
            problems.append(("invocations.orphan_messages", f"message {r['id']} belongs to unknown session {sid!r}"))
            continue
        messages[str(r["id"])] = Message(str(r["id"]), sid, data)
        sessions[sid].messages.append(messages[str(r["id"])])
    for r in conn.execute("SELECT id, message_id, time_created, data FROM part ORDER BY id"):
        data = _json(r["data"], f"part {r['id']}", problems)
        owner = messages.get(str(r["message_id"]))
        if data is None or owner is None:
            continue  # a part of a message we could not read is gone with it (that message's problem is named)
        created = r["time_created"] if isinstance(r["time_created"], int) else None
        owner.parts.append(Part(str(r["id"]), created, data))
    return sessions


def _json(raw: Any, what: str, problems: list[tuple[str, str]]) -> dict[str, Any] | None:
    try:
        data = loads_line(raw)
    except (TypeError, ValueError) as exc:
        problems.append(("store.row_unreadable", f"{what}: data is not JSON ({exc})"))
        return None
    if not isinstance(data, dict):
        problems.append(("store.row_unreadable", f"{what}: data is not a JSON object"))
        return None
    return data


def _log(paths: list[Path], problems: list[tuple[str, str]]) -> list[LogLine]:
    out: list[LogLine] = []
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            problems.append(("log.unreadable", f"{path.name}: {exc}"))
            continue
        processing: dict[str | None, str | None] = {}  # session -> the message it is processing
        for line in text.splitlines():
            fields = {k: _unquote(v) for k, v in _LOGFMT.findall(line)}
            session, kind = fields.get("session.id"), fields.get("message")
            if kind == "process" and "messageID" in fields:
                processing[session] = fields["messageID"]
            if kind not in ("stream", "stream error"):
                continue
            try:
                at = datetime.fromisoformat(fields.get("timestamp", ""))
            except ValueError:
                problems.append(("log.line_unreadable", f"{path.name}: a `{kind}` line without a readable time"))
                continue
            small = fields.get("small") == "true"
            out.append(LogLine(at, kind, session, processing.get(session), small, fields.get("error.error")))
    return out


def _unquote(value: str) -> str:
    if len(value) >= 2 and value.startswith('"') and value.endswith('"'):
        try:
            loaded = loads_line(value)
        except ValueError:
            return value[1:-1]
        return loaded if isinstance(loaded, str) else value[1:-1]
    return value
