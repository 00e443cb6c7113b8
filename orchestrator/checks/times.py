"""Recorded times read as datetimes: ISO-8601 text parsed once per distinct text, None for anything else."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime
from itertools import groupby
from typing import Any

__all__ = ["TimeCache", "latest", "parse_time"]

# UTC, "Z"-suffixed: among such texts of one length (so with as many fraction digits), text order is time order.
_UTC_TEXT = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z", re.ASCII)


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


def latest(values: Iterable[Any], times: TimeCache) -> datetime | None:
    """The latest of the values that are times (anything else is passed over), None when none is.

    The proxy writes every witness time in one UTC form and width: those are compared as text, in C, and only the
    latest is parsed (a 400,000-event witness holds about as many distinct microsecond times). Any other mix is
    parsed value by value.
    """
    # Nothing else can be a time. A run of equal texts (a coarse clock, a synthetic witness) is taken once.
    texts = [t for t, _ in groupby(v for v in values if isinstance(v, str))]
    if texts and len(set(map(len, texts))) == 1 and all(map(_UTC_TEXT.fullmatch, texts)):
        found = times.parse(max(texts))
        if found is not None:  # else the text-latest names no date (a 13th month): judged value by value
            return found
    return max(filter(None, map(times.parse, texts)), default=None)
