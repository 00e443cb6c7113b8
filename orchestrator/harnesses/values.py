"""Readers of one value a harness wrote: each takes what it finds and gives the typed value or None, never raises."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from orchestrator.evidence.jsonread import MAX_INT_DIGITS

__all__ = ["bounded", "count", "epoch_iso", "integer", "iso", "moment", "nonempty", "string"]


def string(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def nonempty(value: Any) -> str | None:
    """A string with something in it; "" is as good as none."""
    return value if isinstance(value, str) and value else None


_INT_LIMIT = 10**MAX_INT_DIGITS  # an int at or past it has more digits than the rollout may hold


def integer(value: Any) -> int | None:
    """An int as recorded, negative ones included (bool is no int here); one of more than MAX_INT_DIGITS digits,
    which no rollout may hold, is unknown."""
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    return value if -_INT_LIMIT < value < _INT_LIMIT else None


def count(value: Any) -> int | None:
    """A count: a non-negative int. One the harness did not give (or of more than MAX_INT_DIGITS digits) stays
    unknown, never 0."""
    found = integer(value)
    return found if found is not None and found >= 0 else None


def bounded(value: Any) -> Any:
    """A raw JSON value to copy into the rollout as it is, each int of more than MAX_INT_DIGITS digits in it (which
    no rollout may hold) made unknown (None)."""
    if isinstance(value, dict):
        return {k: bounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [bounded(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return integer(value)
    return value


def moment(value: Any) -> datetime | None:
    """An ISO 8601 time a harness wrote (`2026-12-06T02:30:29.952Z`), when it names its zone; anything else is none."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def iso(moment: datetime | None) -> str | None:
    """An aware UTC datetime in the rollout's form, to the microsecond (2026-01-01T00:00:00.000000Z)."""
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z") if moment else None


def epoch_iso(value: Any, per_second: int = 1) -> str | None:
    """An epoch time (seconds, or `per_second` units a second) to the millisecond; one out of range is none."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        moment = datetime.fromtimestamp(value / per_second, UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
