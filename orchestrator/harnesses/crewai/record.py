"""Reads what our CrewAI driver saved of CrewAI's own reports: the run record (what kickoff returned or raised) and
the event log (CrewAI's event bus, one event a line, in the order the bus delivered them)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.harnesses.base import NormalizeError
from orchestrator.harnesses.jsonl import loads_line, read_jsonl
from orchestrator.harnesses.values import nonempty

__all__ = ["EVENTS_FORMAT", "EVENTS_NAME", "RECORD_FORMAT", "RECORD_NAME", "CrewNative", "read_native", "unrepr"]

RECORD_NAME = "run.json"
RECORD_FORMAT = "probe-crewai-run/v1"
EVENTS_NAME = "events.jsonl"
EVENTS_FORMAT = "probe-crewai-events/v1"
# CrewAI serializes an event's messages with its own serializer at the default depth of five
# (crewai.utilities.serialization.to_serializable): a value five levels down is written as its Python repr.
REPR_DEPTH = 5
# A repr longer than this is left as written: reading it back costs time and memory in proportion.
_REPR_CHARS = 1 << 20


@dataclass
class CrewNative:
    record: dict[str, Any] | None  # the run record; None when the driver never wrote one (the run was killed)
    events: list[dict[str, Any]]  # CrewAI's events in the order the bus delivered them
    problems: list[tuple[str, str]] = field(default_factory=list)  # (gap code, detail) found while reading

    @property
    def returned(self) -> dict[str, Any] | None:
        value = self.record.get("returned") if self.record else None
        return value if isinstance(value, dict) else None

    @property
    def raised(self) -> dict[str, Any] | None:
        value = self.record.get("raised") if self.record else None
        return value if isinstance(value, dict) else None

    @property
    def version(self) -> str | None:
        return nonempty(self.record.get("crewai_version")) if self.record else None

    def of_type(self, *types: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") in types]


def read_native(folder: Path) -> CrewNative:
    """native/<probe folder> -> CrewNative; NormalizeError when neither file holds anything readable."""
    problems: list[tuple[str, str]] = []
    events_path = folder / EVENTS_NAME
    lines = read_jsonl(events_path, "events", problems) if events_path.is_file() else []
    if lines and lines[0].get("format") == EVENTS_FORMAT:
        lines = lines[1:]
    elif events_path.is_file():
        problems.append(("native.events_header_missing", f"{EVENTS_NAME} does not open with its format line"))
    record = _record(folder / RECORD_NAME, problems)
    if record is None and not lines:
        raise NormalizeError(f"the driver wrote neither {RECORD_NAME} nor any CrewAI event ({EVENTS_NAME})")
    if record is None:
        problems.append(("native.record_missing", f"no {RECORD_NAME}: the run ended before kickoff returned"))
    return CrewNative(record, [e for e in lines if isinstance(e.get("type"), str)], problems)


def _record(path: Path, problems: list[tuple[str, str]]) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        data = loads_line(path.read_bytes())
    except (ValueError, RecursionError) as exc:
        problems.append(("native.record_unreadable", f"{RECORD_NAME} is not JSON: {exc}"))
        return None
    if not isinstance(data, dict) or data.get("format") != RECORD_FORMAT:
        problems.append(("native.record_unreadable", f"{RECORD_NAME} is not a CrewAI run record ({RECORD_FORMAT})"))
        return None
    return data


def unrepr(value: Any, depth: int = 0) -> Any:
    """A value CrewAI serialized with its depth cap, with the Python reprs it wrote at the cap read back (a repr of
    a string, list or dict is a Python literal); a repr that is no literal stays the string it is."""
    if depth == REPR_DEPTH and isinstance(value, str) and len(value) <= _REPR_CHARS:
        try:
            return ast.literal_eval(value)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return value
    if isinstance(value, list):
        return [unrepr(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {k: unrepr(v, depth + 1) for k, v in value.items()}
    return value
