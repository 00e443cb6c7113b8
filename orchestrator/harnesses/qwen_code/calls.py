"""One Qwen Code API event (`qwen-code.api_response` / `qwen-code.api_error`) -> one probe-rollout/v1 model call."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, cast

from orchestrator.harnesses.errors_text import transport_category
from orchestrator.harnesses.values import count, integer, iso, moment, nonempty
from orchestrator.records import ModelCall, TokenStats, token_stats

__all__ = ["API_ERROR", "API_RESPONSE", "AUTH_TYPES", "model_call", "usage_stats"]

# Our protocol names -> Qwen's auth types (each a content generator of its own: OpenAI Chat Completions, OpenAI
# Responses, the Anthropic SDK). Its fourth, `gemini`, speaks generateContent, which the proxy does not serve.
AUTH_TYPES = {"chat": "openai", "responses": "openai-responses", "messages": "anthropic"}
_PROTOCOLS = {auth: protocol for protocol, auth in AUTH_TYPES.items()}
API_RESPONSE = "qwen-code.api_response"
API_ERROR = "qwen-code.api_error"


def model_call(call_id: str, invocation_id: str, event: dict[str, Any]) -> ModelCall:
    """The record of one API event Qwen logged: a reply it received whole, or an attempt that ended in an error."""
    ok = event.get("event.name") == API_RESPONSE
    logged = moment(event.get("event.timestamp"))
    duration = count(event.get("duration_ms"))
    # Qwen logs the event when the reply ended, with how long the request took: the start is that much earlier.
    started = logged - timedelta(milliseconds=duration) if logged is not None and duration is not None else None
    status = integer(event.get("status_code"))
    message = nonempty(event.get("error_message"))
    auth = nonempty(event.get("auth_type"))
    record: dict[str, Any] = {
        "model_call_id": call_id,
        "started_at": iso(started),
        "completed_at": iso(logged),
        # The auth type Qwen logged the call under; one we do not know stays as Qwen named it, for the schema
        # checks to report.
        "protocol": _PROTOCOLS.get(auth, auth) if auth else None,
        "status_code": status,
        # A failed attempt may carry the id of a stream cut midway: kept in extensions, never as a reply's id.
        "response_id": nonempty(event.get("response_id")) if ok else None,
        "finish_reason": None,
        "error_category": None if ok else _category(status, message, nonempty(event.get("error_type"))),
        "token_stats": _tokens(event) if ok else token_stats(),
        "invocation_id": invocation_id,
    }
    if not ok:
        record["error"] = message
    return cast(ModelCall, record)


def _category(status: int | None, message: str | None, error_type: str | None) -> str:
    if status is not None:
        return f"http_{status}"
    return transport_category(f"{error_type or ''} {message or ''}") or "error"


def _tokens(event: dict[str, Any]) -> TokenStats:
    """The counts Qwen logged for the reply (its usageMetadata, Gemini's names): each one it left out stays unknown."""
    return token_stats(
        prompt=count(event.get("input_token_count")),
        completion=count(event.get("output_token_count")),
        reasoning=count(event.get("thoughts_token_count")),
        total=count(event.get("total_token_count")),
        cached=count(event.get("cached_content_token_count")),
    )


def usage_stats(usage: Any) -> TokenStats:
    """An assistant record's usageMetadata (Gemini's names); without one, every count is unknown."""
    u = usage if isinstance(usage, dict) else {}
    return token_stats(
        prompt=count(u.get("promptTokenCount")),
        completion=count(u.get("candidatesTokenCount")),
        reasoning=count(u.get("thoughtsTokenCount")),
        total=count(u.get("totalTokenCount")),
        cached=count(u.get("cachedContentTokenCount")),
    )
