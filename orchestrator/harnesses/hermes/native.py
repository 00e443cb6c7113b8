"""Reads what Hermes itself wrote (state.db through a read-only copy, request dumps) into plain typed records."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from orchestrator.harnesses.base import NormalizeError, tool_arguments
from orchestrator.harnesses.jsonl import loads_line
from orchestrator.harnesses.sqlite_store import readonly_copy
from orchestrator.harnesses.values import integer, string

__all__ = [
    "DB_FILES",
    "Message",
    "NativeLog",
    "RequestDump",
    "Session",
    "ToolRequest",
    "epoch_utc",
    "naive_utc",
    "read_native",
]

# The database and its WAL sidecars: a run killed before Hermes closed the store leaves its last writes in -wal.
DB_FILES = ("state.db", "state.db-wal", "state.db-shm")
_SESSION_COLUMNS = (
    "id, source, model, parent_session_id, started_at, ended_at, end_reason, system_prompt, api_call_count, "
    "input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, estimated_cost_usd"
)
_MESSAGE_COLUMNS = (
    "id, session_id, role, content, api_content, tool_call_id, tool_calls, tool_name, timestamp, finish_reason"
)
_AGGREGATES = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")


@dataclass(frozen=True)
class ToolRequest:
    """One entry of an assistant message's tool_calls, as Hermes stored it."""

    tool_call_id: str
    tool_name: str
    arguments: Any  # parsed JSON object, or the raw string when it is not JSON


@dataclass(frozen=True)
class Message:
    row_id: int
    session_id: str
    role: str
    content: str | None
    api_content: str | None  # the exact text sent to the model, when it differs from content
    tool_call_id: str | None
    tool_requests: tuple[ToolRequest, ...]
    tool_name: str | None
    timestamp: float | None
    finish_reason: str | None


@dataclass(frozen=True)
class Session:
    id: str
    source: str | None
    model: str | None
    parent_id: str | None
    started_at: float | None
    ended_at: float | None
    end_reason: str | None
    system_prompt: str | None
    api_call_count: int | None
    aggregates: dict[str, Any]  # session-wide token totals and cost: never per call
    messages: list[Message] = field(default_factory=list)


@dataclass(frozen=True)
class RequestDump:
    """A request Hermes dumped to sessions/ when it gave up on it (non-retryable error or retries exhausted)."""

    name: str
    session_id: str | None
    timestamp: str | None  # naive local time as Hermes wrote it
    reason: str | None
    url: str | None
    error: dict[str, Any]


@dataclass
class NativeLog:
    sessions: list[Session]
    dumps: list[RequestDump]
    problems: list[tuple[str, str]]  # (gap code, detail) for records that were present but unreadable


def read_native(native_dir: Path) -> NativeLog:
    """native/ -> sessions with their messages, plus request dumps; NormalizeError when state.db cannot be read."""
    if not (native_dir / "state.db").is_file():
        raise NormalizeError("Hermes wrote no state.db (state.db missing in native/)")
    problems: list[tuple[str, str]] = []
    with readonly_copy(native_dir, "state.db", ("sessions", "messages")) as conn:
        sessions = _sessions(conn)
        _attach_messages(conn, sessions, problems)
    dumps = _dumps(native_dir / "sessions", problems)
    return NativeLog(list(sessions.values()), dumps, problems)


def _sessions(conn: sqlite3.Connection) -> dict[str, Session]:
    out: dict[str, Session] = {}
    for r in conn.execute(f"SELECT {_SESSION_COLUMNS} FROM sessions ORDER BY started_at, id"):
        # Only int counts and a numeric cost are kept: another value (a BLOB) in the column is left unknown.
        aggregates: dict[str, Any] = {k: integer(r[k]) for k in _AGGREGATES}
        cost = r["estimated_cost_usd"]
        aggregates["estimated_cost_usd"] = (
            cost if isinstance(cost, int | float) and not isinstance(cost, bool) else None
        )
        out[str(r["id"])] = Session(
            id=str(r["id"]),
            source=string(r["source"]),
            model=string(r["model"]),
            parent_id=string(r["parent_session_id"]),
            started_at=_number(r["started_at"]),
            ended_at=_number(r["ended_at"]),
            end_reason=string(r["end_reason"]),
            system_prompt=string(r["system_prompt"]),
            api_call_count=r["api_call_count"] if isinstance(r["api_call_count"], int) else None,
            aggregates=aggregates,
        )
    return out


def _attach_messages(conn: sqlite3.Connection, sessions: dict[str, Session], problems: list[tuple[str, str]]) -> None:
    for r in conn.execute(f"SELECT {_MESSAGE_COLUMNS} FROM messages ORDER BY id"):
        sid = str(r["session_id"])
        if sid not in sessions:
            problems.append(("invocations.orphan_messages", f"message {r['id']} belongs to unknown session {sid!r}"))
            continue
        sessions[sid].messages.append(
            Message(
                row_id=int(r["id"]),
                session_id=sid,
                role=str(r["role"]),
                content=string(r["content"]),
                api_content=string(r["api_content"]),
                tool_call_id=string(r["tool_call_id"]),
                tool_requests=_tool_requests(r["tool_calls"], int(r["id"]), problems),
                tool_name=string(r["tool_name"]),
                timestamp=_number(r["timestamp"]),
                finish_reason=string(r["finish_reason"]),
            )
        )


def _tool_requests(raw: Any, row_id: int, problems: list[tuple[str, str]]) -> tuple[ToolRequest, ...]:
    if raw is None or raw == "":
        return ()
    try:
        items = loads_line(raw)
    except (TypeError, ValueError, RecursionError) as exc:  # ValueError: not JSON, or an integer too long to convert
        problems.append(("conversation.tool_calls_unreadable", f"message {row_id}: tool_calls is not JSON ({exc})"))
        return ()
    if not isinstance(items, list):
        problems.append(("conversation.tool_calls_unreadable", f"message {row_id}: tool_calls is not a list"))
        return ()
    out = []
    for n, item in enumerate(items):
        fn = item.get("function") if isinstance(item, dict) else None
        cid = item.get("id") if isinstance(item, dict) else None
        if not (isinstance(fn, dict) and isinstance(cid, str) and isinstance(fn.get("name"), str)):
            problems.append(("conversation.tool_calls_unreadable", f"message {row_id}: tool_calls[{n}] has no id/name"))
            continue
        out.append(ToolRequest(cid, fn["name"], tool_arguments(fn.get("arguments"))))
    return tuple(out)


def _dumps(folder: Path, problems: list[tuple[str, str]]) -> list[RequestDump]:
    out: list[RequestDump] = []
    for path in sorted(folder.glob("request_dump_*.json")) if folder.is_dir() else []:
        try:
            data = loads_line(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError) as exc:  # ValueError: not UTF-8, not JSON, or too long an integer
            problems.append(("model_calls.request_dump_unreadable", f"{path.name}: {exc}"))
            continue
        if not isinstance(data, dict):
            problems.append(("model_calls.request_dump_unreadable", f"{path.name}: not a JSON object"))
            continue
        error = data.get("error")
        if not isinstance(error, dict):
            continue  # a debug dump of a request that did not fail (HERMES_DUMP_REQUESTS): no attempt outcome
        request = data.get("request")
        out.append(
            RequestDump(
                name=path.name,
                session_id=string(data.get("session_id")),
                timestamp=string(data.get("timestamp")),
                reason=string(data.get("reason")),
                url=string(request.get("url")) if isinstance(request, dict) else None,
                error=error,
            )
        )
    return out


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def epoch_utc(value: float | None) -> datetime | None:
    """state.db times are epoch seconds; one out of range is as good as none."""
    try:
        return datetime.fromtimestamp(value, UTC) if value is not None else None
    except (OverflowError, OSError, ValueError):
        return None


def naive_utc(value: str | None) -> datetime | None:
    # Dump times are naive local time; the launch sets TZ=UTC, so local time is UTC.
    try:
        parsed = datetime.fromisoformat(value) if value else None
    except ValueError:
        return None
    if parsed is None:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
