"""Reads an OpenTelemetry file export into plain log records, spans and metric points, whatever wrote it.

Two shapes are read. The JS SDK's objects as an exporter serializes them one after another (Gemini CLI's `local`
target: each log record, span or metrics export `JSON.stringify`-ed, pretty or on one line, back to back), and OTLP's
JSON encoding (`resourceLogs` / `resourceSpans` / `resourceMetrics`, one export request a line, as an OTLP/HTTP
receiver or a collector's file exporter writes it). Each value is read with the strict JSON reader; one that is not
JSON, or of neither shape, is named in `problems` and skipped, so a harness cut off mid-write still yields what it
wrote whole.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from orchestrator.evidence.jsonread import JsonFault, loads, read_bytes

__all__ = ["LogRecord", "MetricPoint", "Span", "Telemetry", "attributes_of", "read_export"]

# What one export may hold before the rest is left unread: far above a probe episode's few hundred records.
MAX_RECORDS = 200_000
_OPENERS = ("{", "[")
_CLOSERS = ("}", "]")


@dataclass(frozen=True)
class LogRecord:
    """A log record (an event): its time, `event.name`, body and attributes, and the span it was made in."""

    time: str | None
    event: str | None
    body: Any
    attributes: Mapping[str, Any]
    trace_id: str | None = None
    span_id: str | None = None


@dataclass(frozen=True)
class Span:
    name: str | None
    start: str | None
    end: str | None
    attributes: Mapping[str, Any]
    trace_id: str | None = None
    span_id: str | None = None
    parent_span_id: str | None = None
    status_code: int | None = None  # OTel's: 0 unset, 1 ok, 2 error


@dataclass(frozen=True)
class MetricPoint:
    """One data point of one metric in one export: a number (sum, gauge) or a histogram's {count, sum, ...}."""

    metric: str
    attributes: Mapping[str, Any]
    value: Any
    time: str | None
    export: int  # which metrics export it came from, in file order (cumulative metrics: the last one is the total)


@dataclass
class Telemetry:
    logs: list[LogRecord] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)
    points: list[MetricPoint] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    exports: int = 0

    def events(self, name: str) -> list[LogRecord]:
        return [r for r in self.logs if r.event == name]


def _iso_ns(nanos: int) -> str | None:
    try:
        moment = datetime.fromtimestamp(nanos // 1_000_000_000, UTC).replace(
            microsecond=(nanos % 1_000_000_000) // 1000
        )
    except (OverflowError, OSError, ValueError):
        return None
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


def _hr_time(value: Any) -> str | None:
    """The JS SDK's HrTime [seconds, nanoseconds]; OTLP's `timeUnixNano` (a decimal string or a number)."""
    if (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        return _iso_ns(value[0] * 1_000_000_000 + value[1])
    if isinstance(value, str) and value.isdigit() and len(value) <= 20:
        return _iso_ns(int(value))
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return _iso_ns(value)
    return None


def _otlp_value(value: Any) -> Any:
    """An OTLP AnyValue ({stringValue: ...}, {intValue: "3"}, {arrayValue: {values: [...]}}, ...) as a plain value."""
    if not isinstance(value, Mapping):
        return None
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        raw = value["intValue"]
        return int(raw) if isinstance(raw, str) and raw.lstrip("-").isdigit() and len(raw) <= 20 else raw
    if isinstance(value.get("arrayValue"), Mapping):
        return [_otlp_value(v) for v in value["arrayValue"].get("values") or [] if isinstance(v, Mapping)]
    if isinstance(value.get("kvlistValue"), Mapping):
        return attributes_of(value["kvlistValue"].get("values"))
    return None


def attributes_of(raw: Any) -> dict[str, Any]:
    """Attributes as a dict: the JS SDK's object as it is, OTLP's [{key, value}] list with each value unwrapped."""
    if isinstance(raw, Mapping):
        return {str(k): v for k, v in raw.items()}
    if isinstance(raw, list):
        return {
            a["key"]: _otlp_value(a.get("value"))
            for a in raw
            if isinstance(a, Mapping) and isinstance(a.get("key"), str)
        }
    return {}


def _obj(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _values(text: str) -> Iterator[str]:
    """Each top-level JSON value of a file of values back to back: one a line, or pretty-printed (its first line
    opens it and a line starting at column 0 with its closing bracket ends it; JSON strings hold no raw newline)."""
    lines: list[str] = []
    for line in text.splitlines():
        if not lines and not line.strip():
            continue
        lines.append(line)
        if line.startswith(_CLOSERS) or (
            len(lines) == 1 and line.rstrip().endswith(_CLOSERS) and line.startswith(_OPENERS)
        ):
            yield "\n".join(lines)
            lines = []
    if lines:
        yield "\n".join(lines)


class _Reader:
    def __init__(self) -> None:
        self.out = Telemetry()

    def full(self) -> bool:
        return len(self.out.logs) + len(self.out.spans) + len(self.out.points) >= MAX_RECORDS

    def value(self, value: Any, where: str) -> None:
        if not isinstance(value, Mapping):
            self.out.problems.append(f"{where}: not an object")
        elif "resourceLogs" in value or "resourceSpans" in value or "resourceMetrics" in value:
            self._otlp(value)
        elif "scopeMetrics" in value:
            self._js_metrics(value)
        elif "hrTime" in value:
            self._js_log(value)
        elif "_spanContext" in value or ("startTime" in value and "endTime" in value and "name" in value):
            self._js_span(value)
        else:
            self.out.problems.append(f"{where}: neither a log record, a span nor metrics")

    def _js_log(self, v: Mapping[str, Any]) -> None:
        attributes = attributes_of(v.get("attributes"))
        context = _obj(v.get("spanContext"))
        self.out.logs.append(
            LogRecord(
                time=_hr_time(v.get("hrTime")),
                event=_text(attributes.get("event.name")),
                body=v.get("_body", v.get("body")),
                attributes=attributes,
                trace_id=_text(context.get("traceId")),
                span_id=_text(context.get("spanId")),
            )
        )

    def _span(self, v: Mapping[str, Any], times: tuple[str, str], ids: tuple[Any, Any, Any]) -> None:
        """One span: `times` name its start and end keys, `ids` are its trace, span and parent span ids."""
        code = _obj(v.get("status")).get("code")
        self.out.spans.append(
            Span(
                name=_text(v.get("name")),
                start=_hr_time(v.get(times[0])),
                end=_hr_time(v.get(times[1])),
                attributes=attributes_of(v.get("attributes")),
                trace_id=_text(ids[0]),
                span_id=_text(ids[1]),
                parent_span_id=_text(ids[2]),
                status_code=code if isinstance(code, int) and not isinstance(code, bool) else None,
            )
        )

    def _js_span(self, v: Mapping[str, Any]) -> None:
        context, parent = _obj(v.get("_spanContext")), _obj(v.get("parentSpanContext"))
        parent_id = parent.get("spanId") or v.get("parentSpanId")
        self._span(v, ("startTime", "endTime"), (context.get("traceId"), context.get("spanId"), parent_id))

    def _js_metrics(self, v: Mapping[str, Any]) -> None:
        self.out.exports += 1
        for scope in v.get("scopeMetrics") or []:
            for metric in scope.get("metrics") or [] if isinstance(scope, Mapping) else []:
                if not isinstance(metric, Mapping):
                    continue
                descriptor = _obj(metric.get("descriptor"))
                name = _text(descriptor.get("name"))
                for point in metric.get("dataPoints") or []:
                    if name is not None and isinstance(point, Mapping):
                        self._point(name, point.get("attributes"), point.get("value"), point.get("endTime"))

    def _point(self, name: str, attributes: Any, value: Any, time: Any) -> None:
        if not self.full():
            self.out.points.append(
                MetricPoint(name, attributes_of(attributes), value, _hr_time(time), self.out.exports)
            )

    def _otlp(self, v: Mapping[str, Any]) -> None:
        for resource in v.get("resourceLogs") or []:
            for scope in _list(resource, "scopeLogs"):
                for record in _list(scope, "logRecords"):
                    attributes = attributes_of(record.get("attributes"))
                    name = _text(record.get("eventName")) or _text(attributes.get("event.name"))
                    body = _otlp_value(record.get("body")) if isinstance(record.get("body"), Mapping) else None
                    time = _hr_time(record.get("timeUnixNano")) or _hr_time(record.get("observedTimeUnixNano"))
                    ids = (_text(record.get("traceId")), _text(record.get("spanId")))
                    self.out.logs.append(LogRecord(time, name, body, attributes, *ids))
        for resource in v.get("resourceSpans") or []:
            for scope in _list(resource, "scopeSpans"):
                for span in _list(scope, "spans"):
                    span_ids = (span.get("traceId"), span.get("spanId"), span.get("parentSpanId"))
                    self._span(span, ("startTimeUnixNano", "endTimeUnixNano"), span_ids)
        if v.get("resourceMetrics"):
            self.out.exports += 1
        for resource in v.get("resourceMetrics") or []:
            for scope in _list(resource, "scopeMetrics"):
                for metric in _list(scope, "metrics"):
                    metric_name = _text(metric.get("name"))
                    for kind in ("sum", "gauge", "histogram"):
                        data = metric.get(kind)
                        for point in _list(data, "dataPoints") if metric_name is not None else []:
                            value = point.get("asInt", point.get("asDouble"))
                            if kind == "histogram":
                                value = {k: point.get(k) for k in ("count", "sum", "min", "max") if k in point}
                            self._point(metric_name or "", point.get("attributes"), value, point.get("timeUnixNano"))


def _list(holder: Any, key: str) -> list[Mapping[str, Any]]:
    items = holder.get(key) if isinstance(holder, Mapping) else None
    return [i for i in items if isinstance(i, Mapping)] if isinstance(items, list) else []


def read_export(path: Path) -> Telemetry:
    """Every record of the file at `path` (regular, within the collection cap); unreadable parts are `problems`."""
    reader = _Reader()
    try:
        raw = read_bytes(path)
    except (OSError, JsonFault) as exc:
        reader.out.problems.append(f"{path.name}: {exc}")
        return reader.out
    text = raw.decode("utf-8", errors="replace")
    for n, chunk in enumerate(_values(text)):
        if reader.full():
            reader.out.problems.append(f"{path.name}: more than {MAX_RECORDS} records; the rest is left unread")
            break
        try:
            value = loads(chunk)
        except (JsonFault, ValueError, RecursionError) as exc:
            reader.out.problems.append(f"{path.name}: value {n + 1} is not JSON ({str(exc)[:120]})")
            continue
        reader.value(value, f"{path.name}: value {n + 1}")
    return reader.out
