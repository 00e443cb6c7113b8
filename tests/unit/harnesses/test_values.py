"""The shared readers of one native value: typed value or None, never a guess and never an exception."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from orchestrator.harnesses.values import count, epoch_iso, integer, iso, nonempty, string


@pytest.mark.parametrize(("value", "expected"), [(0, 0), (7, 7), (-1, None), (True, None), (1.0, None), ("3", None)])
def test_count_is_a_non_negative_int_and_nothing_else(value: object, expected: int | None) -> None:
    assert count(value) == expected


@pytest.mark.parametrize(("value", "expected"), [(-1, -1), (0, 0), (False, None), (2.5, None), (None, None)])
def test_integer_keeps_negative_ints_and_refuses_bool(value: object, expected: int | None) -> None:
    assert integer(value) == expected


def test_strings() -> None:
    assert string("") == "" and string(3) is None
    assert nonempty("") is None and nonempty("a") == "a" and nonempty(["a"]) is None


def test_iso_is_utc_to_the_microsecond() -> None:
    assert iso(datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC)) == "2026-01-02T03:04:05.000006Z"
    assert iso(None) is None


@pytest.mark.parametrize(
    ("value", "per_second", "expected"),
    [
        (1_767_225_600, 1, "2026-01-01T00:00:00.000Z"),
        (1_767_225_600_250, 1000, "2026-01-01T00:00:00.250Z"),
        (10**30, 1, None),  # out of range: as good as none
        (float("nan"), 1, None),
        (True, 1, None),
        ("1767225600", 1, None),
    ],
)
def test_epoch_iso(value: object, per_second: int, expected: str | None) -> None:
    assert epoch_iso(value, per_second) == expected
