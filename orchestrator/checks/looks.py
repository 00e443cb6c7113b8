"""Whole-column looks at the honest case for the checks over the model calls: True only where a check finds nothing.

Each reads the shared columns of join.py (a field of 100,000 calls read once for every check that looks at it) and
decides a check's common case at once; False says nothing, and the check reads entry by entry as it always did,
which alone words reasons. A look that meets what it did not expect raises, and `decided` takes that as False.
"""

from __future__ import annotations

from datetime import datetime
from operator import ge, le
from typing import Any

from orchestrator.checks.evidence import Evidence
from orchestrator.checks.join import all_2xx, all_ok, attempt_column, call_column, decided, join_calls, model_calls

__all__ = ["calls_inside_attempts", "outcomes_ok", "times_ordered"]


def _nonblank_strings(values: list[Any]) -> bool:
    return set(map(type, values)) == {str} and "" not in values


def outcomes_ok(ev: Evidence, items: list[Any]) -> bool:
    """calls.outcome's honest case: every call an object, a 2xx (an int) with a response id and a finish reason."""

    def look() -> bool:
        if len(model_calls(ev)) != len(items):
            return False  # an entry that is not an object: the reading below fails on it as it always did
        return (
            all_2xx(call_column(ev, "status_code"))
            and _nonblank_strings(call_column(ev, "response_id"))
            and _nonblank_strings(call_column(ev, "finish_reason"))
        )

    return bool(items) and decided(look)


def _parsed(values: list[Any], parse: Any) -> list[datetime]:
    """Each value parsed (each distinct text once); raises where one is not a string or does not parse."""
    if set(map(type, values)) != {str}:
        raise TypeError("not all strings")
    texts = {text: parse(text) for text in set(values)}
    if None in texts.values():
        raise ValueError("a time that does not parse")
    return list(map(texts.__getitem__, values))


def times_ordered(ev: Evidence, items: list[Any], parse: Any) -> bool:
    """calls.timing's honest case: every call an object whose times parse, end not before start, starts in order.
    (Times that cannot be compared, naive with aware, raise: then the reading below decides, as it always did.)"""

    def look() -> bool:
        if len(model_calls(ev)) != len(items):
            return False
        starts = _parsed(call_column(ev, "started_at"), parse)
        ends = _parsed(call_column(ev, "completed_at"), parse)
        return all(map(ge, ends, starts)) and all(map(le, starts, starts[1:]))

    return bool(items) and decided(look)


def calls_inside_attempts(ev: Evidence, parse: Any) -> bool:
    """calls.witness_times's honest case: every call a success paired with the attempt at its position, and each
    call's times inside its attempt's (started no earlier than its request arrived and no later than its answer,
    completed no earlier than the request arrived)."""

    def look() -> bool:
        joined = join_calls(ev)
        if not (joined.positional and all_ok(joined.keys)):
            return False
        start, end = _parsed(call_column(ev, "started_at"), parse), _parsed(call_column(ev, "completed_at"), parse)
        sent = _parsed(attempt_column(ev, "started_at"), parse)
        answered = _parsed(attempt_column(ev, "completed_at"), parse)
        return all(map(le, start, answered)) and all(map(ge, end, sent)) and all(map(ge, start, sent))

    return decided(look)
