"""The OpenTelemetry GenAI semantic conventions read from a Telemetry: inference operations, tool executions, and
the token usage metric, with the attribute names the conventions give (and the variants harnesses are seen to use).

An operation is what the `gen_ai.client.inference.operation.details` event reports once an inference has ended (a
response model or id, usage or an `error.type`); the same event made when a request is sent (Gemini CLI makes one)
carries none of these and is left out. Tool executions are the spans of operation `execute_tool`, or any span naming
a tool call id (`gen_ai.tool.call.id`; Gemini CLI 0.61 writes `gen_ai.tool.call_id`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from orchestrator.harnesses.jsonl import loads_line
from orchestrator.harnesses.otel.read import Span, Telemetry
from orchestrator.harnesses.values import count, nonempty

__all__ = [
    "OPERATION_DETAILS",
    "Operation",
    "ToolExecution",
    "metric_totals",
    "operations",
    "token_usage_totals",
    "tool_executions",
]

OPERATION_DETAILS = "gen_ai.client.inference.operation.details"
TOKEN_USAGE = "gen_ai.client.token.usage"
_TOOL_CALL_IDS = ("gen_ai.tool.call.id", "gen_ai.tool.call_id")
# What only an ended inference's event carries (the request's event has no response model, id, usage or error).
_ENDED = ("gen_ai.response.id", "gen_ai.response.model", "error.type", "gen_ai.usage.input_tokens")


@dataclass(frozen=True)
class Operation:
    """One inference as the GenAI conventions describe it."""

    time: str | None
    operation: str | None
    request_model: str | None
    response_model: str | None
    response_id: str | None
    finish_reasons: tuple[str, ...]
    input_tokens: int | None
    output_tokens: int | None
    error_type: str | None
    server_address: str | None
    server_port: int | None
    output_messages: Any  # the parsed `gen_ai.output.messages`, None when not recorded
    attributes: Mapping[str, Any]


@dataclass(frozen=True)
class ToolExecution:
    call_id: str | None
    name: str | None
    start: str | None
    end: str | None
    ok: bool | None  # the span's status: ok, error, or unset (None)
    attributes: Mapping[str, Any]


def _json_attribute(value: Any) -> Any:
    """A structured attribute the conventions carry as a JSON string (messages), parsed; anything else as it is."""
    if isinstance(value, str):
        try:
            return loads_line(value)
        except (ValueError, RecursionError):
            return value
    return value


def operations(telemetry: Telemetry) -> list[Operation]:
    """Each ended inference the operation-details events report, in file order."""
    found: list[Operation] = []
    for record in telemetry.events(OPERATION_DETAILS):
        a = record.attributes
        ended = any(k in a for k in _ENDED)
        if not ended:
            continue
        reasons = a.get("gen_ai.response.finish_reasons")
        port = a.get("server.port")
        found.append(
            Operation(
                time=record.time,
                operation=nonempty(a.get("gen_ai.operation.name")),
                request_model=nonempty(a.get("gen_ai.request.model")),
                response_model=nonempty(a.get("gen_ai.response.model")),
                response_id=nonempty(a.get("gen_ai.response.id")),
                finish_reasons=tuple(r for r in reasons if isinstance(r, str)) if isinstance(reasons, list) else (),
                input_tokens=count(a.get("gen_ai.usage.input_tokens")),
                output_tokens=count(a.get("gen_ai.usage.output_tokens")),
                error_type=nonempty(a.get("error.type")),
                server_address=nonempty(a.get("server.address")),
                server_port=port if isinstance(port, int) and not isinstance(port, bool) else None,
                output_messages=_json_attribute(a["gen_ai.output.messages"]) if "gen_ai.output.messages" in a else None,
                attributes=a,
            )
        )
    return found


def _call_id(span: Span) -> str | None:
    return next((v for k in _TOOL_CALL_IDS if isinstance(v := span.attributes.get(k), str) and v), None)


def tool_executions(telemetry: Telemetry) -> list[ToolExecution]:
    """Each tool execution span, in order of start."""
    spans = [
        s
        for s in telemetry.spans
        if s.attributes.get("gen_ai.operation.name") == "execute_tool" or _call_id(s) is not None
    ]
    spans.sort(key=lambda s: s.start or "")
    return [
        ToolExecution(
            call_id=_call_id(s),
            name=nonempty(s.attributes.get("gen_ai.tool.name")),
            start=s.start,
            end=s.end,
            ok=None if s.status_code in (None, 0) else s.status_code == 1,
            attributes=s.attributes,
        )
        for s in spans
    ]


def metric_totals(telemetry: Telemetry, metric: str, kind: str) -> dict[str, int] | None:
    """A cumulative metric's values summed by one attribute (`kind`) over its last export: a histogram's sum, a
    counter's value; None when no export carries the metric."""
    points = [p for p in telemetry.points if p.metric == metric]
    if not points:
        return None
    last = max(p.export for p in points)
    totals: dict[str, int] = {}
    for p in points:
        name = p.attributes.get(kind)
        total = p.value.get("sum") if isinstance(p.value, Mapping) else p.value
        if (
            p.export == last
            and isinstance(name, str)
            and isinstance(total, int | float)
            and not isinstance(total, bool)
        ):
            totals[name] = totals.get(name, 0) + int(total)
    return totals


def token_usage_totals(telemetry: Telemetry) -> dict[str, int] | None:
    """The `gen_ai.client.token.usage` histogram's sums by `gen_ai.token.type` in the last metrics export."""
    return metric_totals(telemetry, TOKEN_USAGE, "gen_ai.token.type")
