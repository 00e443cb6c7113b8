"""Scripted faults: their kinds, the fields each kind takes, and how each is read from the scenario JSON."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

DEFAULT_ERROR_TYPE = "probe_error"
DEFAULT_ERROR_MESSAGE = "scripted model failure"
# A withheld reply is held at most this long; then the proxy closes the connection itself, so a harness
# without any deadline cannot keep an episode open for ever.
DEFAULT_WITHHOLD_MAX_SECONDS = 600.0
# How long a cut stream stays open after its last event, so the client surely reads those events first.
DEFAULT_CUT_PAUSE_SECONDS = 0.5

# Kinds answered without the due step (they consume none of it): an error status, no reply, a closed connection.
HTTP_ERROR = "http_error"
WITHHOLD = "withhold"
RESET = "reset"
OVERLOADED = "overloaded"  # the protocol's own overload error: Anthropic 529 overloaded_error, OpenAI 503
NOT_JSON = "not_json"  # a 200 whose body is an HTML page (a gateway's), whatever was asked
QUOTA = "quota"  # a request quota per window: past it, 429 with Retry-After until the window passes
# Kinds that play the due step altered, without consuming it: the next attempt gets the step again, fresh ids.
CUT = "cut"  # closed part-way
LENGTH_CUT = "length_cut"  # ended at the token limit: text (or arguments) cut, finish reason length
ARGS_TRUNCATED = "args_truncated"  # the tool calls' arguments JSON cut off, finish reason as usual
SSE_MALFORMED = "sse_malformed"  # one event whose data is not valid JSON (a JSON reply: the body broken)
ERROR_EVENT = "error_event"  # an error event inside the 200 stream after some content (a JSON reply: an error body)

STEP_FAULTS = frozenset({CUT, LENGTH_CUT, ARGS_TRUNCATED, SSE_MALFORMED, ERROR_EVENT})
FAULT_KINDS = frozenset({HTTP_ERROR, WITHHOLD, RESET, OVERLOADED, NOT_JSON, QUOTA}) | STEP_FAULTS
# Fields each kind may carry besides `attempt`, `kind` and `repeat` (a quota takes no `repeat`: it always holds).
FAULT_FIELDS: dict[str, frozenset[str]] = {
    HTTP_ERROR: frozenset({"status", "error_type", "message", "retry_after", "retry_after_ms", "delay_seconds"}),
    WITHHOLD: frozenset({"max_seconds"}),
    CUT: frozenset({"after_events", "pause_seconds"}),
    RESET: frozenset(),
    OVERLOADED: frozenset(),
    NOT_JSON: frozenset(),
    QUOTA: frozenset({"requests", "window_seconds"}),
    LENGTH_CUT: frozenset(),
    ARGS_TRUNCATED: frozenset(),
    SSE_MALFORMED: frozenset(),
    ERROR_EVENT: frozenset(),
}


class FaultError(ValueError):
    """A fault entry that does not describe a playable fault."""


@dataclass(frozen=True)
class Fault:
    """A scripted failure answering one model attempt (or, with `repeat`, that attempt and all later ones).

    `http_error`: a JSON error body with `status`, after `delay_seconds` of real silence, with `Retry-After` and
    `retry-after-ms` headers when `retry_after` / `retry_after_ms` are set. `withhold`: no reply (a stream gets its
    headers and a comment line) until the client gives up, at most `max_seconds`. `cut`: the due step's reply, with
    the connection closed after `after_events` events (None: about half; a JSON reply: half the body). `reset`: the
    connection closed with no reply. `quota`: from `attempt` on, at most `requests` model attempts are served in a
    window of `window_seconds` (opened by the first one); the others get a 429 asking to wait for the window's end.
    The other kinds take no fields (see FAULT_KINDS).
    """

    attempt: int
    kind: str
    status: int | None = None
    repeat: bool = False
    error_type: str = DEFAULT_ERROR_TYPE
    message: str = DEFAULT_ERROR_MESSAGE
    retry_after: float | None = None
    retry_after_ms: float | None = None
    delay_seconds: float = 0.0
    max_seconds: float = DEFAULT_WITHHOLD_MAX_SECONDS
    after_events: int | None = None
    pause_seconds: float = DEFAULT_CUT_PAUSE_SECONDS
    requests: int = 1
    window_seconds: float = 0.0


def is_int(value: object) -> TypeGuard[int]:
    # bool is an int subclass; a YAML `true` must not pass as exit code 1.
    return isinstance(value, int) and not isinstance(value, bool)


def _seconds(entry: Mapping[str, Any], key: str, where: str, default: float | None) -> float | None:
    value = entry.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise FaultError(f"{where}.{key} must be a number >= 0")
    return float(value)


def parse_fault(index: int, entry: Mapping[str, Any]) -> Fault:
    where = f"faults[{index}]"
    attempt = entry.get("attempt")
    if not is_int(attempt) or attempt < 0:
        raise FaultError(f"{where}.attempt must be an integer >= 0")
    kind = entry.get("kind")
    if kind not in FAULT_KINDS:
        raise FaultError(f"{where}.kind must be one of {sorted(FAULT_KINDS)}")
    foreign = set(entry) - {"attempt", "kind", "repeat"} - FAULT_FIELDS[kind]
    if kind == QUOTA and "repeat" in entry:
        foreign.add("repeat")
    if foreign:
        raise FaultError(f"{where}: a {kind} fault does not take {sorted(foreign)}")
    repeat = entry.get("repeat", False)
    if not isinstance(repeat, bool):
        raise FaultError(f"{where}.repeat must be a boolean")
    if kind == HTTP_ERROR:
        return _http_error(where, attempt, repeat, entry)
    if kind == WITHHOLD:
        max_seconds = _seconds(entry, "max_seconds", where, DEFAULT_WITHHOLD_MAX_SECONDS)
        return Fault(attempt=attempt, kind=kind, repeat=repeat, max_seconds=max_seconds or 0.0)
    if kind == CUT:
        after_events = entry.get("after_events")
        if after_events is not None and (not is_int(after_events) or after_events < 0):
            raise FaultError(f"{where}.after_events must be an integer >= 0 or null")
        pause = _seconds(entry, "pause_seconds", where, DEFAULT_CUT_PAUSE_SECONDS)
        return Fault(attempt=attempt, kind=kind, repeat=repeat, after_events=after_events, pause_seconds=pause or 0.0)
    if kind == QUOTA:
        requests = entry.get("requests")
        window = _seconds(entry, "window_seconds", where, None)
        if not is_int(requests) or requests < 1:
            raise FaultError(f"{where}.requests must be an integer >= 1")
        if window is None or window <= 0:
            raise FaultError(f"{where}.window_seconds must be a number > 0")
        return Fault(attempt=attempt, kind=kind, requests=requests, window_seconds=window)
    return Fault(attempt=attempt, kind=kind, repeat=repeat)


def _http_error(where: str, attempt: int, repeat: bool, entry: Mapping[str, Any]) -> Fault:
    status = entry.get("status")
    if not is_int(status) or not 400 <= status <= 599:
        raise FaultError(f"{where}.status must be an HTTP status 400..599")
    error_type = entry.get("error_type", DEFAULT_ERROR_TYPE)
    message = entry.get("message", DEFAULT_ERROR_MESSAGE)
    if not isinstance(error_type, str) or not isinstance(message, str):
        raise FaultError(f"{where}.error_type and .message must be strings")
    return Fault(
        attempt=attempt,
        kind=HTTP_ERROR,
        status=status,
        repeat=repeat,
        error_type=error_type,
        message=message,
        retry_after=_seconds(entry, "retry_after", where, None),
        retry_after_ms=_seconds(entry, "retry_after_ms", where, None),
        delay_seconds=_seconds(entry, "delay_seconds", where, 0.0) or 0.0,
    )


def parse_faults(value: object) -> tuple[Fault, ...]:
    if not isinstance(value, list):
        raise FaultError("scenario `faults` must be a list")
    faults: list[Fault] = []
    seen: set[int] = set()
    for index, raw in enumerate(value):
        if not isinstance(raw, Mapping):
            raise FaultError(f"faults[{index}] must be an object")
        fault = parse_fault(index, raw)
        if fault.attempt in seen:
            raise FaultError(f"faults[{index}]: attempt {fault.attempt} already has a fault")
        if fault.kind == QUOTA and any(f.kind == QUOTA for f in faults):
            raise FaultError(f"faults[{index}]: a scenario has at most one quota")
        seen.add(fault.attempt)
        faults.append(fault)
    return tuple(faults)
