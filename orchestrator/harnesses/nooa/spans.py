"""NOOA's OpenTelemetry span files (`traces/*.jsonl`, OTLP JSON): the LiteLLM call spans, read defensively."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from orchestrator.harnesses.jsonl import loads_line

__all__ = ["LlmSpan", "read_llm_spans"]

# One span per `litellm.acompletion` call (openinference's LiteLLM instrumentation names it so).
LLM_SPAN = "acompletion"
# OTel status code ERROR.
_STATUS_ERROR = 2
# The openai SDK's message for an HTTP status error, kept in the exception text LiteLLM wraps it in.
_ERROR_CODE = re.compile(r"Error code: (\d{3})\b")


@dataclass
class LlmSpan:
    """One model call as NOOA's tracer recorded it."""

    span_id: str
    start_ns: int | None
    end_ns: int | None
    failed: bool
    attributes: dict[str, Any]
    error: str | None = None
    status_code: int | None = None
    exception_type: str | None = None
    resource: dict[str, Any] = field(default_factory=dict)

    def iso(self, ns: int | None) -> str | None:
        if ns is None:
            return None
        at = datetime.fromtimestamp(ns // 1_000_000_000, tz=UTC).replace(microsecond=(ns // 1000) % 1_000_000)
        return at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    def count(self, key: str) -> int | None:
        value = self.attributes.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None

    def text(self, key: str) -> str | None:
        value = self.attributes.get(key)
        return value if isinstance(value, str) else None

    def output_tool_call_ids(self) -> list[str]:
        """Ids of the tool calls in the reply, in the order the tracer numbered them."""
        prefix = "llm.output_messages.0.message.tool_calls."
        found: dict[int, str] = {}
        for key, value in self.attributes.items():
            if key.startswith(prefix) and key.endswith(".tool_call.id") and isinstance(value, str):
                index = key[len(prefix) :].split(".", 1)[0]
                if index.isdigit():
                    found[int(index)] = value
        return [found[i] for i in sorted(found)]

    def input_messages(self) -> list[dict[str, Any]] | None:
        """The request's messages as the tracer kept them (`input.value`), or None when absent or not JSON."""
        raw = self.text("input.value")
        try:
            doc = loads_line(raw) if raw else None
        except (ValueError, RecursionError):
            return None
        messages = doc.get("messages") if isinstance(doc, dict) else None
        return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else None


def _dicts(parent: Any, key: str) -> list[dict[str, Any]]:
    items = parent.get(key) if isinstance(parent, dict) else None
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def _value(v: Any) -> Any:
    """An OTLP AnyValue as a Python value (int values arrive as strings in OTLP JSON)."""
    if not isinstance(v, dict):
        return None
    if "stringValue" in v:
        return v["stringValue"]
    if "intValue" in v:
        raw = v["intValue"]
        try:
            return int(raw)
        except (TypeError, ValueError):
            return None
    if "boolValue" in v:
        return v["boolValue"]
    if "doubleValue" in v:
        return v["doubleValue"]
    return None


def _attributes(raw: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for a in raw if isinstance(raw, list) else []:
        if isinstance(a, dict) and isinstance(a.get("key"), str):
            out[a["key"]] = _value(a.get("value"))
    return out


def _nanos(raw: Any) -> int | None:
    try:
        n = int(raw)
    except (TypeError, ValueError):
        return None
    # Beyond year 9999 or before 1970 is no time a span was recorded at.
    return n if 0 <= n < 253_402_300_800 * 1_000_000_000 else None


def _span(raw: dict[str, Any], resource: dict[str, Any]) -> LlmSpan:
    status = raw.get("status")
    status = status if isinstance(status, dict) else {}
    failed = status.get("code") == _STATUS_ERROR
    message = status.get("message") if isinstance(status.get("message"), str) else None
    texts = [message or ""]
    exception_type = None
    for event in _dicts(raw, "events"):
        if event.get("name") == "exception":
            attrs = _attributes(event.get("attributes"))
            exception_type = attrs.get("exception.type") if isinstance(attrs.get("exception.type"), str) else None
            texts += [str(attrs.get("exception.message") or ""), str(attrs.get("exception.stacktrace") or "")]
    found = next((m for t in texts if (m := _ERROR_CODE.search(t))), None) if failed else None
    return LlmSpan(
        span_id=str(raw.get("spanId") or ""),
        start_ns=_nanos(raw.get("startTimeUnixNano")),
        end_ns=_nanos(raw.get("endTimeUnixNano")),
        failed=failed,
        attributes=_attributes(raw.get("attributes")),
        error=message if failed else None,
        status_code=int(found.group(1)) if found else None,
        exception_type=exception_type,
        resource=resource,
    )


def read_llm_spans(traces: Path) -> tuple[list[LlmSpan], int]:
    """Every LLM call span in traces/*.jsonl by start time, and how many lines were not OTLP JSON."""
    spans: list[LlmSpan] = []
    bad = 0
    files = sorted(p for p in traces.glob("*.jsonl") if p.is_file()) if traces.is_dir() else []
    for path in files:
        for line in path.read_bytes().splitlines():
            if not line.strip():
                continue
            try:
                doc = loads_line(line)
            except (ValueError, RecursionError):
                bad += 1
                continue
            for rs in _dicts(doc, "resourceSpans"):
                res = rs.get("resource")
                resource = _attributes(res.get("attributes")) if isinstance(res, dict) else {}
                for ss in _dicts(rs, "scopeSpans"):
                    spans += [_span(raw, resource) for raw in _dicts(ss, "spans") if raw.get("name") == LLM_SPAN]
    far = 2**63
    spans.sort(key=lambda s: (s.start_ns if s.start_ns is not None else far, s.span_id))
    return spans, bad
