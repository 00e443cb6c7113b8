"""`not_json`: a 200 whose body is a gateway's HTML page, not the JSON or SSE the client asked for."""

from __future__ import annotations

from collections.abc import Callable

from proxy_addons.fault_shapes import ErrorShape

# What a reverse proxy or captive gateway in front of a provider serves when its upstream is away: a status of 200
# (some put the error only in the page), an HTML content type, and a page a JSON parser fails on at its first byte.
PAGE = (
    "<!DOCTYPE html>\n<html><head><title>Service Unavailable</title></head>\n<body><h1>Service Unavailable</h1>"
    "<p>The upstream server is temporarily unable to service your request. Please try again later.</p>"
    "</body></html>\n"
)
CONTENT_TYPE = "text/html; charset=utf-8"


def _page() -> ErrorShape:
    return ErrorShape(200, PAGE.encode("utf-8"), None, {"content-type": CONTENT_TYPE}, {"body": PAGE})


# The same page whatever the protocol: the gateway in front does not speak it. On a Gemini stream its lines are not
# `data:` lines, which google-genai reads as raw JSON and fails on.
RENDER: dict[str, Callable[[], ErrorShape]] = {
    "chat": _page,
    "responses": _page,
    "messages": _page,
    "gemini": _page,
}
