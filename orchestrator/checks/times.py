"""Recorded times read as datetimes: ISO-8601 text parsed once per distinct text, None for anything else."""

from __future__ import annotations

from datetime import datetime
from typing import Any

__all__ = ["TimeCache", "parse_time"]


class TimeCache:
    """parse_time, each distinct text parsed once: 100,000 records carry far fewer distinct times than entries."""

    def __init__(self) -> None:
        self._seen: dict[str, datetime | None] = {}

    def parse(self, value: Any) -> datetime | None:
        if type(value) is not str:
            return parse_time(value)
        try:
            return self._seen[value]
        except KeyError:
            parsed = self._seen[value] = parse_time(value)
            return parsed


def parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None
