"""`quota`: a request quota per window; past it, each protocol's 429 with the wait until the window ends."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from proxy_addons.fault_shapes import ErrorShape, anthropic_request_id, json_error
from proxy_addons.gemini import retry_delay, with_retry_info

# The quota Google names in a free tier's 429 (its QuotaFailure detail and message).
GEMINI_METRIC = "generativelanguage.googleapis.com/generate_content_free_tier_requests"
GEMINI_QUOTA_ID = "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"


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


def _gemini(refused: Refused) -> ErrorShape:
    """Google's 429: RESOURCE_EXHAUSTED with the quota that failed, a help link and the wait as `RetryInfo` (its only
    machine-readable form: Google sends no Retry-After header), the same wait in words at the message's end."""
    wait = retry_delay(refused.left)
    message = (
        "You exceeded your current quota, please check your plan and billing details. For more information on this "
        "error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.\n"
        f"* Quota exceeded for metric: {GEMINI_METRIC}, limit: {refused.limit}, model: {refused.model}\n"
        f"Please retry in {wait}."
    )
    violation = {
        "quotaMetric": GEMINI_METRIC,
        "quotaId": GEMINI_QUOTA_ID,
        "quotaDimensions": {"location": "global", "model": refused.model},
        "quotaValue": str(refused.limit),
    }
    details = [
        {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [violation]},
        {
            "@type": "type.googleapis.com/google.rpc.Help",
            "links": [
                {
                    "description": "Learn more about Gemini API quotas",
                    "url": "https://ai.google.dev/gemini-api/docs/rate-limits",
                }
            ],
        },
    ]
    body = {"error": {"code": 429, "message": message, "status": "RESOURCE_EXHAUSTED", "details": details}}
    shape = _played(json_error(429, with_retry_info(body, refused.left)), refused)
    return ErrorShape(shape.status, shape.body, shape.response, shape.headers, {**shape.played, "retry_delay": wait})


def _played(shape: ErrorShape, refused: Refused) -> ErrorShape:
    # The shortest wait asked for: the exact milliseconds (the whole seconds are rounded up).
    played = {**shape.played, "retry_after_seconds": math.ceil(refused.left * 1000) / 1000}
    return ErrorShape(shape.status, shape.body, shape.response, shape.headers, played)


RENDER: dict[str, Callable[[Refused], ErrorShape]] = {
    "chat": _openai,
    "responses": _openai,
    "messages": _messages,
    "gemini": _gemini,
}
