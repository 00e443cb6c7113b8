"""OpenTelemetry as a harness's second self-report: its file export read (`read`), the GenAI semantic conventions
taken from it (`genai`). A harness adapter maps what its own events add on top (Gemini CLI: `gemini_cli/telemetry`)."""

from orchestrator.harnesses.otel.genai import (
    Operation,
    ToolExecution,
    metric_totals,
    operations,
    token_usage_totals,
    tool_executions,
)
from orchestrator.harnesses.otel.read import LogRecord, MetricPoint, Span, Telemetry, attributes_of, read_export

__all__ = [
    "LogRecord",
    "MetricPoint",
    "Operation",
    "Span",
    "Telemetry",
    "ToolExecution",
    "attributes_of",
    "metric_totals",
    "operations",
    "read_export",
    "token_usage_totals",
    "tool_executions",
]
