"""`overloaded`: the provider says it is over capacity, in each protocol's own words (a retryable error)."""

from __future__ import annotations

from collections.abc import Callable

from proxy_addons.fault_shapes import ErrorShape, anthropic_request_id, json_error

# Anthropic's status for an overloaded API (its SDK raises OverloadedError for it and retries it as a 5xx).
ANTHROPIC_OVERLOADED = 529
# OpenAI answers a saturated fleet with 503 and a server_error body; its SDKs retry every 5xx.
OPENAI_OVERLOADED = 503
OPENAI_MESSAGE = "The server is overloaded or not ready yet."
# Google's API says it in its own error shape: 503 with the RPC status UNAVAILABLE (google-genai raises ServerError,
# Gemini CLI retries it with backoff).
GEMINI_MESSAGE = "The model is overloaded. Please try again later."


def _openai() -> ErrorShape:
    body = {"error": {"message": OPENAI_MESSAGE, "type": "server_error", "param": None, "code": None}}
    return json_error(OPENAI_OVERLOADED, body)


def _messages() -> ErrorShape:
    request_id = anthropic_request_id()
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}, "request_id": request_id}
    return json_error(ANTHROPIC_OVERLOADED, body, {"request-id": request_id})


def _gemini() -> ErrorShape:
    return json_error(OPENAI_OVERLOADED, {"error": {"code": 503, "message": GEMINI_MESSAGE, "status": "UNAVAILABLE"}})


RENDER: dict[str, Callable[[], ErrorShape]] = {
    "chat": _openai,
    "responses": _openai,
    "messages": _messages,
    "gemini": _gemini,
}
