"""UTC timestamps in the ISO-8601 `Z` form the rollout format requires."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> str:
    """The current time as `YYYY-MM-DDTHH:MM:SS.ffffffZ`."""
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
