"""Copilot CLI's model attempts: dispatches from its stdout stream, joined to its session's usage records by id."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from orchestrator.harnesses.copilot.native import Event
from orchestrator.harnesses.values import count, integer, nonempty
from orchestrator.records import ModelCall, TokenStats, token_stats

__all__ = ["Attempt", "attempts_from_session", "attempts_from_stream", "model_call", "protocol_of", "usage_by_id"]

# Copilot's `apiEndpoint` (its CAPI vocabulary) -> our protocol names.
ENDPOINTS = {
    "/chat/completions": "chat",
    "/responses": "responses",
    "/v1/messages": "messages",
    "/messages": "messages",
}
# Copilot records every protocol's finish reason in OpenAI Chat's vocabulary (its schema: "normalized to OpenAI
# vocabulary"); per protocol, the wire value each of its values is made from.
FINISH_REASONS = {
    "responses": {"stop": "completed", "tool_calls": "completed", "length": "incomplete"},
    "messages": {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"},
}


@dataclass
class Attempt:
    """One model dispatch as Copilot logged it: model.call_start, then model.call_failure and/or
    model.call_finished; a success's reply is the assistant.message (and usage record) carrying its response id."""

    turn_id: str | None
    started_at: str | None
    completed_at: str | None = None
    outcome: str | None = None  # model.call_finished `outcome`: success | error | ...; None: never finished
    failure: dict[str, Any] | None = None  # model.call_failure's data
    response_id: str | None = None
    finish_at: int = -1  # index of its model.call_finished in the stream (joins the reply that follows it)
    extra: dict[str, Any] = field(default_factory=dict)


def attempts_from_stream(stream: list[Event]) -> list[Attempt]:
    """The main agent's dispatches in stream order; each success joined to the reply that follows it."""
    attempts: list[Attempt] = []
    open_: Attempt | None = None
    for n, e in enumerate(stream):
        if not e.main:
            continue
        if e.type == "model.call_start":
            open_ = Attempt(nonempty(e.data.get("turnId")), e.timestamp)
            attempts.append(open_)
        elif e.type == "model.call_failure" and open_ is not None:
            open_.failure = e.data
            open_.completed_at = e.timestamp
        elif e.type == "model.call_finished" and open_ is not None:
            open_.outcome = nonempty(e.data.get("outcome"))
            open_.completed_at = open_.completed_at if open_.failure else e.timestamp
            open_.finish_at = n
            open_ = None
        elif e.type == "assistant.message" and attempts and attempts[-1].outcome == "success":
            last = attempts[-1]
            # A reply may come in several messages (chunks); all carry the one response id of their call.
            last.response_id = last.response_id or nonempty(e.data.get("apiCallId"))
    return attempts


def attempts_from_session(session: list[Event]) -> list[Attempt]:
    """Without the stream: the successes the session's usage records name (failed attempts are not persisted)."""
    return [
        Attempt(None, None, outcome="success", response_id=nonempty(_usage(e).get("apiCallId")))
        for e in session
        if e.type == "session.usage_record" and e.main and "parentToolCallId" not in _usage(e)
    ]


def _usage(e: Event) -> dict[str, Any]:
    u = e.data.get("usage")
    return u if isinstance(u, dict) else {}


def usage_by_id(session: list[Event]) -> dict[str, dict[str, Any]]:
    """The session's usage records by response id (Copilot writes one per successful call of its own)."""
    found: dict[str, dict[str, Any]] = {}
    for e in session:
        u = _usage(e) if e.type == "session.usage_record" else {}
        rid = nonempty(u.get("apiCallId"))
        if rid is not None:
            found.setdefault(rid, u)
    return found


def protocol_of(endpoint: Any) -> str | None:
    name = nonempty(endpoint)
    return ENDPOINTS.get(name, name) if name else None


def model_call(a: Attempt, usage: dict[str, Any] | None, call_id: str, invocation_id: str) -> ModelCall:
    """The record of one attempt: a reply with its usage record, or a failure with what Copilot kept of it."""
    ok = a.outcome == "success"
    failure = a.failure or {}
    u = usage or {}
    protocol = protocol_of(u.get("apiEndpoint") if ok else failure.get("apiEndpoint"))
    status = integer(failure.get("statusCode"))
    raw_finish = nonempty(u.get("finishReason"))
    record: dict[str, Any] = {
        "model_call_id": call_id,
        "started_at": a.started_at,
        "completed_at": a.completed_at,
        "protocol": protocol,
        # Copilot logs no status for a reply it accepted: a success is given 200 (a named gap).
        "status_code": 200 if ok else status,
        "response_id": a.response_id if ok else None,
        "finish_reason": FINISH_REASONS.get(protocol or "", {}).get(raw_finish or "", raw_finish) if ok else None,
        "error_category": None if ok else _category(a, status),
        "token_stats": tokens(u) if ok else token_stats(),
        "invocation_id": invocation_id,
    }
    if not ok:
        record["error"] = nonempty(failure.get("errorMessage"))
    # Typed once built: a protocol Copilot named that we do not know stays as named, for the schema checks.
    return cast(ModelCall, record)


def _category(a: Attempt, status: int | None) -> str:
    if status is not None:
        return f"http_{status}"
    if a.failure is None:
        # Dispatched, never finished: the run ended (or was killed) while Copilot still waited for the reply.
        return "unfinished" if a.outcome is None else str(a.outcome)
    # Copilot's own word for a failure without an HTTP status ("transport"): it names no way the reply ended.
    return nonempty(a.failure.get("failureKind")) or "error"


def tokens(u: dict[str, Any]) -> TokenStats:
    """A usage record in the rollout's convention. Copilot's inputTokens counts every prompt token, cache reads
    included, on all three protocols (seen: Anthropic's input_tokens 194097 + cache reads 3 recorded as 194100);
    it records no total."""
    return token_stats(
        prompt=count(u.get("inputTokens")),
        completion=count(u.get("outputTokens")),
        reasoning=count(u.get("reasoningTokens")),
        total=None,
        cached=count(u.get("cacheReadTokens")),
    )
