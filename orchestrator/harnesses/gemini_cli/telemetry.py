"""Gemini CLI's OpenTelemetry record of its model calls and tool calls: its own `gemini_cli.*` events joined with
the GenAI operation-details events it writes beside them.

Each HTTP attempt it made is a `gemini_cli.api_request` event when it is sent, then a `gemini_cli.api_response` (a
reply it read to the end; its status is always 200, set by Gemini CLI, not read from the wire) or
`gemini_cli.api_error` (status, error text) event with its duration.
Beside each, written in the same call and with the same `event.timestamp`, is a `gen_ai.client.inference.operation
.details` event: the reply's `gen_ai.response.id` and finish reasons. Tool calls are `gemini_cli.tool_call` events
(name, success, duration) and `tool_call` spans (the call id).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from orchestrator.harnesses.jsonl import loads_line
from orchestrator.harnesses.otel import Operation, Telemetry, ToolExecution, operations, tool_executions
from orchestrator.harnesses.otel.read import LogRecord
from orchestrator.harnesses.values import count, integer, iso, nonempty

__all__ = ["OtelAttempt", "attempts", "tool_spans"]

API_RESPONSE = "gemini_cli.api_response"
API_ERROR = "gemini_cli.api_error"
API_REQUEST = "gemini_cli.api_request"
TOKEN_FIELDS = ("input_token_count", "output_token_count", "cached_content_token_count", "thoughts_token_count")


@dataclass(frozen=True)
class OtelAttempt:
    """One model attempt as Gemini CLI's telemetry reports it."""

    started_at: str | None
    completed_at: str | None  # None: the request's end is not in the telemetry (killed, or its last events lost)
    status_code: int | None
    role: str | None  # `main` for the agent's turns; others are its side requests (compression, checks)
    ok: bool
    response_id: str | None
    finish_reasons: tuple[str, ...]
    tokens: dict[str, int | None]  # Gemini's own names, as the event carries them
    error: Any
    error_type: str | None
    response_text: str | None
    operation: Operation | None

    @property
    def ended(self) -> bool:
        return self.completed_at is not None


def _moment(record: LogRecord) -> datetime | None:
    """When the event was made: its `event.timestamp` (Gemini CLI's own, to the millisecond), else the record's."""
    for value in (record.attributes.get("event.timestamp"), record.time):
        if isinstance(value, str):
            try:
                moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                continue
            if moment.tzinfo is not None:
                return moment
    return None


def _error(value: Any) -> Any:
    """The error text as recorded: the API's JSON error body when it is one, parsed, else the text."""
    if isinstance(value, str):
        try:
            parsed = loads_line(value)
        except (ValueError, RecursionError):
            return value
        return parsed if isinstance(parsed, dict) else value
    return value


def _ended(record: LogRecord, start: datetime | None, op: Operation | None) -> OtelAttempt:
    a = record.attributes
    end = _moment(record)
    duration = count(a.get("duration_ms"))
    if start is None and end is not None and duration is not None:
        start = end - timedelta(milliseconds=duration)
    ok = record.event == API_RESPONSE
    return OtelAttempt(
        started_at=iso(start),
        completed_at=iso(end),
        status_code=integer(a.get("status_code")),
        role=nonempty(a.get("role")),
        ok=ok,
        response_id=op.response_id if op is not None and ok else None,
        finish_reasons=op.finish_reasons if op is not None and ok else (),
        tokens={k: count(a.get(k)) for k in (*TOKEN_FIELDS, "total_token_count")} if ok else {},
        error=None if ok else _error(a.get("error")),
        error_type=nonempty(a.get("error.type")),
        response_text=nonempty(a.get("response_text")),
        operation=op,
    )


def attempts(telemetry: Telemetry) -> list[OtelAttempt]:
    """Every attempt in the order it was sent: each `api_request` with the end (`api_response` or `api_error`)
    that followed it in the same role, and the operation details written beside that end. A request whose end is
    missing is an attempt with no outcome; an end with no request starts its duration before it."""
    details: dict[str, list[Operation]] = {}
    for detail in operations(telemetry):
        stamp = detail.attributes.get("event.timestamp")
        if isinstance(stamp, str):
            details.setdefault(stamp, []).append(detail)
    records = [r for r in telemetry.logs if r.event in (API_REQUEST, API_RESPONSE, API_ERROR)]
    records.sort(key=lambda r: iso(_moment(r)) or "")
    out: list[OtelAttempt] = []
    waiting: dict[str | None, list[int]] = {}  # role -> indexes of requests not yet ended, oldest first
    for record in records:
        role = nonempty(record.attributes.get("role"))
        if record.event == API_REQUEST:
            waiting.setdefault(role, []).append(len(out))
            out.append(OtelAttempt(iso(_moment(record)), None, None, role, False, None, (), {}, None, None, None, None))
            continue
        stamp = record.attributes.get("event.timestamp")
        beside = details.get(stamp, []) if isinstance(stamp, str) else []
        op: Operation | None = beside.pop(0) if beside else None
        queue = waiting.get(role) or []
        if queue:
            index = queue.pop(0)
            out[index] = _ended(record, _parse(out[index].started_at), op)
        else:
            out.append(_ended(record, None, op))
    return out


def _parse(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None


def tool_spans(telemetry: Telemetry) -> list[ToolExecution]:
    return tool_executions(telemetry)
