"""The latest witness time, found by comparing text, is the latest found by parsing every value."""

from __future__ import annotations

import random
from datetime import datetime
from typing import Any

import pytest

from orchestrator.checks.times import TimeCache, latest


def _parsed(values: list[Any]) -> datetime | None:
    times = TimeCache()
    return max(filter(None, map(times.parse, values)), default=None)


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([], None),
        (["2026-01-01T00:00:00.000Z", "2026-01-01T00:00:02.000Z", "2026-01-01T00:00:01.000Z"], "2026-01-01T00:00:02Z"),
        # The text-latest names no date: the latest real one is found value by value.
        (["2026-13-01T00:00:00.000Z", "2026-01-01T00:00:01.000Z"], "2026-01-01T00:00:01Z"),
        # Widths differ: as text, "…:09Z" sorts after "…:09.5Z", though it is half a second earlier.
        (["2026-01-01T00:00:09Z", "2026-01-01T00:00:09.5Z"], "2026-01-01T00:00:09.5Z"),
        # An offset: text order is not time order.
        (["2026-01-01T01:00:00+05:00", "2026-01-01T00:00:00Z"], "2026-01-01T00:00:00Z"),
        (["2026-01-01T01:00:00+05:00", "2026-01-01T00:00:00+00:00"], "2026-01-01T00:00:00Z"),
        # Digits of another script sort after ASCII's but name no time here.
        (["٢٠٢٦-01-01T00:00:00.000Z", "2026-01-01T00:00:00.000Z"], "2026-01-01T00:00:00Z"),
        ([None, 3, "2026-01-01T00:00:00.000Z"], "2026-01-01T00:00:00Z"),
        ([None, "soon"], None),
    ],
)
def test_named_mixes(values: list[Any], expected: str | None) -> None:
    found = latest(iter(values), TimeCache())
    assert found == (None if expected is None else datetime.fromisoformat(expected))
    assert found == _parsed(values)


@pytest.mark.parametrize("seed", range(200))
def test_random_mixes_give_what_parsing_every_value_gives(seed: int) -> None:
    rng = random.Random(seed)
    forms = [
        lambda t: t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z",
        lambda t: t.strftime("%Y-%m-%dT%H:%M:%SZ"),
        lambda t: t.strftime("%Y-%m-%dT%H:%M:%S.%f+01:00"),
    ]
    one_form = rng.random() < 0.7
    values: list[Any] = []
    for _ in range(rng.randint(1, 30)):
        t = datetime(2026, rng.randint(1, 12), rng.randint(1, 28), rng.randint(0, 23), rng.randint(0, 59),
                     rng.randint(0, 59), rng.randint(0, 999_999))  # fmt: skip
        values.append((forms[0] if one_form else rng.choice(forms))(t))
    if rng.random() < 0.2:
        values[rng.randrange(len(values))] = rng.choice(
            [None, 7, "2026-99-01T00:00:00.000Z", "9999-12-31T23:59:60.000Z"]
        )
    assert latest(iter(values), TimeCache()) == _parsed(values)
