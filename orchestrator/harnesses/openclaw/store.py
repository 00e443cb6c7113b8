"""Reads what OpenClaw itself wrote: its per-agent SQLite store (the session transcript and the runtime trajectory,
through a read-only copy) and the `--json` result it printed, into plain typed records."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.harnesses.base import NormalizeError
from orchestrator.harnesses.jsonl import loads_line
from orchestrator.harnesses.sqlite_store import readonly_copy
from orchestrator.harnesses.values import string

__all__ = ["DB", "RESULT", "STDERR", "Entry", "OpenClawNative", "Run", "read_native"]

DB = "openclaw-agent.sqlite"  # written through its WAL: the last writes may be only in openclaw-agent.sqlite-wal
DB_DIR = Path("agents") / "main" / "agent"  # AGENT_DIR as copied into native/, for the agent `main`
PROBE = Path(".openclaw-probe")  # PROBE_DIR as copied into native/
RESULT = "result.json"  # stdout of `openclaw agent --json`
STDERR = "stderr.log"
_TABLES = ("transcript_events", "trajectory_runtime_events")
_MAX_RESULT_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class Entry:
    """One transcript event (session header, message, model_change, custom, ...) as OpenClaw stored it."""

    session_id: str
    seq: int
    data: dict[str, Any]

    @property
    def type(self) -> str | None:
        return string(self.data.get("type"))

    @property
    def message(self) -> dict[str, Any]:
        m = self.data.get("message") if self.type == "message" else None
        return m if isinstance(m, dict) else {}


@dataclass
class Run:
    """One attempt of the agent run as the runtime trajectory tells it (OpenClaw retries a failed model request by
    running the turn again under the same run id): its events in order, by type."""

    session_id: str
    run_id: str | None
    events: list[dict[str, Any]] = field(default_factory=list)

    def last_event(self, kind: str) -> dict[str, Any] | None:
        found = [e for e in self.events if e.get("type") == kind]
        return found[-1] if found else None

    def last(self, kind: str) -> dict[str, Any] | None:
        data = (self.last_event(kind) or {}).get("data")
        return data if isinstance(data, dict) else None


@dataclass
class OpenClawNative:
    entries: list[Entry]  # every session's transcript, by session then seq
    runs: list[Run]  # the runtime trajectory cut into attempts (each starts with `session.started`)
    result: dict[str, Any] | None  # the `--json` result; None when OpenClaw printed none (killed, crashed)
    problems: list[tuple[str, str]]  # (gap code, detail) for records that were present but unreadable


def read_native(native_dir: Path) -> OpenClawNative:
    """native/ -> transcript, runtime attempts and result; NormalizeError when the store is absent or unreadable."""
    folder = native_dir / DB_DIR
    if not (folder / DB).is_file():
        raise NormalizeError(f"OpenClaw wrote no agent store ({DB_DIR / DB} missing in native/)")
    problems: list[tuple[str, str]] = []
    with readonly_copy(folder, DB, _TABLES) as conn:
        try:
            entries = _entries(conn, problems)
            runs = _runs(conn, problems)
        except sqlite3.DatabaseError as exc:
            raise NormalizeError(f"{DB}: {exc}") from None
    return OpenClawNative(entries, runs, _result(native_dir / PROBE / RESULT, problems), problems)


def _entries(conn: sqlite3.Connection, problems: list[tuple[str, str]]) -> list[Entry]:
    rows = conn.execute(
        "SELECT session_id, seq, event_json, event_zstd IS NOT NULL AS packed FROM transcript_events "
        "ORDER BY session_id, seq"
    )
    out: list[Entry] = []
    for row in rows:
        where = f"transcript_events {row['session_id']}#{row['seq']}"
        if row["event_json"] is None:
            # OpenClaw may store an event zstd-compressed; this reader has no zstd, so the event is unread.
            what = "is zstd-compressed (not read)" if row["packed"] else "has no event"
            problems.append(("transcript.event_unread", f"{where} {what}"))
            continue
        data = _json_object(row["event_json"], where, problems)
        if data is not None and isinstance(row["session_id"], str) and isinstance(row["seq"], int):
            out.append(Entry(row["session_id"], row["seq"], data))
    return out


def _runs(conn: sqlite3.Connection, problems: list[tuple[str, str]]) -> list[Run]:
    rows = conn.execute("SELECT session_id, seq, run_id, event_json FROM trajectory_runtime_events ORDER BY seq")
    runs: list[Run] = []
    for row in rows:
        data = _json_object(row["event_json"], f"trajectory_runtime_events #{row['seq']}", problems)
        if data is None:
            continue
        session, run_id = str(row["session_id"]), string(row["run_id"])
        current = runs[-1] if runs else None
        if current is None or data.get("type") == "session.started" or current.session_id != session:
            current = Run(session, run_id)
            runs.append(current)
        current.events.append(data)
    return runs


def _json_object(text: object, where: str, problems: list[tuple[str, str]]) -> dict[str, Any] | None:
    try:
        data = loads_line(text) if isinstance(text, str) else None
    except (ValueError, RecursionError):
        data = None
    if not isinstance(data, dict):
        problems.append(("store.event_unreadable", f"{where} is not a JSON object"))
        return None
    return data


def _result(path: Path, problems: list[tuple[str, str]]) -> dict[str, Any] | None:
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > _MAX_RESULT_BYTES:
            return None
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if not text.strip():
        return None
    try:
        data = loads_line(text)
    except (ValueError, RecursionError):
        problems.append(("result.unreadable", f"{PROBE / RESULT} is not JSON"))
        return None
    return data if isinstance(data, dict) else None
