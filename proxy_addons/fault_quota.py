"""`quota`: a request quota per window; past it, each protocol's 429 with the wait until the window ends."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from proxy_addons.fault_shapes import ErrorShape, anthropic_request_id, json_error


@dataclass(frozen=True)
class Refused:
    """One request past the quota: the limit, and the seconds left until the window ends."""

    model: str
    limit: int
    window_seconds: float
    left: float

    def headers(self) -> dict[str, str]:
        # Both forms the SDKs read: whole seconds (RFC 9110, rounded up so a waiting client is never early) and
        # exact milliseconds (`retry-after-ms`, read first by the openai and anthropic SDKs).
        return {"retry-after": str(max(1, math.ceil(self.left))), "retry-after-ms": str(math.ceil(self.left * 1000))}


class QuotaWindow:
    """Counts the model attempts a quota serves; a window opens with the first attempt served after the last one
    ended. Time comes from `clock` (seconds), so tests can move it."""

    def __init__(self, requests: int, window_seconds: float, clock: Callable[[], float]) -> None:
        self.requests = requests
        self.window_seconds = window_seconds
        self._clock = clock
        self._opened: float | None = None
        self._served = 0

    def admit(self) -> float | None:
        """None when this attempt may be served (it is counted), else the seconds left in the window."""
        now = self._clock()
        if self._opened is None or now >= self._opened + self.window_seconds:
            self._opened, self._served = now, 0
        if self._served < self.requests:
            self._served += 1
            return None
        return max(0.0, self._opened + self.window_seconds - now)


def _openai(refused: Refused) -> ErrorShape:
    message = (
        f"Rate limit reached for {refused.model} in organization org-probe on requests per min (RPM): "
        f"Limit {refused.limit}, Used {refused.limit}, Requested 1. Please try again in {refused.left:.3f}s."
    )
    body = {"error": {"message": message, "type": "requests", "param": None, "code": "rate_limit_exceeded"}}
    headers = {
        **refused.headers(),
        "x-ratelimit-limit-requests": str(refused.limit),
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": f"{refused.left:.3f}s",
    }
    return _played(json_error(429, body, headers), refused)


def _messages(refused: Refused) -> ErrorShape:
    request_id = anthropic_request_id()
    message = (
        f"This request would exceed the rate limit for your organization of {refused.limit} requests per "
        f"{refused.window_seconds:g} seconds. Please try again later."
    )
    body = {"type": "error", "error": {"type": "rate_limit_error", "message": message}, "request_id": request_id}
    reset = datetime.now(UTC) + timedelta(seconds=refused.left)
    headers = {
        **refused.headers(),
        "anthropic-ratelimit-requests-limit": str(refused.limit),
        "anthropic-ratelimit-requests-remaining": "0",
        "anthropic-ratelimit-requests-reset": reset.isoformat(timespec="seconds").replace("+00:00", "Z"),
        "request-id": request_id,
    }
    return _played(json_error(429, body, headers), refused)


def _played(shape: ErrorShape, refused: Refused) -> ErrorShape:
    # The shortest wait the headers ask for: the exact milliseconds (the whole seconds are rounded up).
    played = {**shape.played, "retry_after_seconds": math.ceil(refused.left * 1000) / 1000}
    return ErrorShape(shape.status, shape.body, shape.response, shape.headers, played)


RENDER: dict[str, Callable[[Refused], ErrorShape]] = {"chat": _openai, "responses": _openai, "messages": _messages}
