"""Claude Code's transcript records -> model call attempts: requests, the replies and errors that ended them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from orchestrator.harnesses.values import count, integer, string
from orchestrator.records import ModelCall, TokenStats
from orchestrator.records import token_stats as counts

__all__ = ["UNRECORDED", "Attempt", "attempts_of", "message_text", "token_stats"]

# Reported for a call whose outcome Claude Code did not write down: it logged the request, nothing after it.
UNRECORDED = "outcome_unrecorded"


@dataclass
class Attempt:
    """One model request attempt as the transcript shows it, with whatever ended it."""

    call_id: str
    started_at: str | None
    query_source: str | None = None
    reply: list[dict[str, Any]] = field(default_factory=list)  # assistant entries sharing one message id
    error: dict[str, Any] | None = None  # the api_error / synthetic error record that ended it
    error_at: str | None = None
    # The wait before the retry the api_error entry announces (`retryInMs`, seen on 2.1.328), when it says one.
    retry_ms: float | None = None

    @property
    def open(self) -> bool:
        return not self.reply and self.error is None

    @property
    def response_id(self) -> str | None:
        return string(_message(self.reply[0]).get("id")) if self.reply else None

    def record(self, invocation_id: str) -> ModelCall:
        # Built in two parts, so its keys keep the order Claude Code's rollouts have always had.
        base: dict[str, Any] = {
            "model_call_id": self.call_id,
            "started_at": self.started_at,
            "protocol": "messages",
            "invocation_id": invocation_id,
            "token_stats": counts(),
        }
        if self.reply:
            last = _message(self.reply[-1])
            stops = [_message(e).get("stop_reason") for e in self.reply if _message(e).get("stop_reason")]
            # A complete message is only written for a reply that arrived whole, so its status was 2xx; the
            # transcript keeps no status of its own (named as a gap).
            return cast(
                ModelCall,
                {
                    **base,
                    "completed_at": self.reply[-1].get("timestamp"),
                    "status_code": 200,
                    "response_id": self.response_id,
                    "finish_reason": stops[-1] if stops else None,
                    "error_category": None,
                    "token_stats": token_stats(last.get("usage")),
                },
            )
        if self.error is not None:
            status = integer(self.error.get("status"))
            failed: dict[str, Any] = {
                **base,
                "completed_at": self.error_at,
                "status_code": status,
                "response_id": None,
                "finish_reason": None,
                "error_category": _category(status, self.error),
                "error": self.error,
            }
            if self.retry_ms is not None:
                failed["retry_delay_ms"] = self.retry_ms
            return cast(ModelCall, failed)
        return cast(
            ModelCall,
            {
                **base,
                "completed_at": None,
                "status_code": None,
                "response_id": None,
                "finish_reason": None,
                "error_category": UNRECORDED,
            },
        )


def attempts_of(entries: list[dict[str, Any]]) -> list[Attempt]:
    """Attempts in the order Claude Code logged them: an `api-request` entry opens one, a reply or error ends it."""
    attempts: list[Attempt] = []
    by_id: dict[str, Attempt] = {}

    def last_open() -> Attempt | None:
        return attempts[-1] if attempts and attempts[-1].open else None

    def new(call_id: str, started_at: str | None) -> Attempt:
        # An id seen twice (a corrupt or replayed transcript) still yields distinct calls.
        while call_id in by_id:
            call_id += "+"
        a = Attempt(call_id, started_at)
        attempts.append(a)
        by_id[call_id] = a
        return a

    for e in entries:
        kind = e.get("type")
        if kind == "api-request" and isinstance(e.get("id"), str):
            a = new(e["id"], string(e.get("timestamp")))
            a.query_source = string(e.get("querySource"))
        elif kind == "system" and e.get("subtype") == "api_error":
            a = last_open() or new(f"api_error/{e.get('uuid')}", None)
            err = e.get("error")
            a.error = dict(err) if isinstance(err, dict) else {"message": str(err)}
            a.error_at = string(e.get("timestamp"))
            wait = e.get("retryInMs")
            if isinstance(wait, int | float) and not isinstance(wait, bool) and wait >= 0:
                a.retry_ms = float(wait)
        elif kind == "assistant" and isinstance(e.get("message"), dict):
            if e.get("isApiErrorMessage"):
                # A synthetic message standing for the error that ended the turn: it ends the last open attempt.
                a = last_open() or new(f"api_error/{e.get('uuid')}", None)
                a.error = _synthetic_error(e)
                a.error_at = string(e.get("timestamp"))
                continue
            mid = _message(e).get("id")
            ref = e.get("requestRef")
            a_ref = by_id.get(ref) if isinstance(ref, str) else None
            if a_ref is not None and (not a_ref.reply or a_ref.response_id == mid):
                a_ref.reply.append(e)
            elif attempts and attempts[-1].reply and attempts[-1].response_id == mid:
                attempts[-1].reply.append(e)  # another content block of the same streamed message
            else:
                a = last_open() or new(str(mid or e.get("uuid")), None)
                a.reply.append(e)
    return attempts


def token_stats(usage: Any) -> TokenStats:
    """Anthropic usage (Claude Code keeps the API's verbatim) -> canonical counts; unrecorded stays null, never 0.

    Anthropic's input_tokens leaves cache reads and writes out, so the prompt is the sum of the three; a sum
    with an unrecorded part is unknown, not smaller.
    """
    u = usage if isinstance(usage, dict) else {}
    details = u.get("output_tokens_details")
    return counts(
        prompt=_prompt(u),
        completion=count(u.get("output_tokens")),
        reasoning=count(details.get("thinking_tokens")) if isinstance(details, dict) else None,
        total=None,  # Claude Code records no total per message
        cached=count(u.get("cache_read_input_tokens")),
    )


def _prompt(usage: dict[str, Any]) -> int | None:
    """input_tokens + cache_read_input_tokens + cache_creation_input_tokens, null when any of them is unrecorded."""
    parts = [count(usage.get(k)) for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")]
    return None if None in parts else sum(p for p in parts if p is not None)


def message_text(content: Any) -> str | None:
    """A content value as text: the string itself, or its text blocks joined (None when it has none)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)]
        return "\n".join(texts) if texts else None
    return None


def _synthetic_error(e: dict[str, Any]) -> dict[str, Any]:
    status = e.get("apiErrorStatus")
    return {
        "status": status if isinstance(status, int) else None,
        "type": e.get("apiErrorType"),
        "error": e.get("error"),
        "message": message_text(_message(e).get("content")),
    }


def _category(status: int | None, error: dict[str, Any]) -> str:
    if status is not None:
        return f"http_{status}"
    conn = error.get("connection")
    code = str(conn.get("code") or "") if isinstance(conn, dict) else ""
    if "TIMEOUT" in code.upper() or "timeout" in str(error.get("message", "")).lower():
        return "timeout"
    if conn or error.get("isNetworkDown") or error.get("noResponse"):
        return "connection"
    return "api_error"


def _message(e: dict[str, Any]) -> dict[str, Any]:
    m = e.get("message")
    return m if isinstance(m, dict) else {}
