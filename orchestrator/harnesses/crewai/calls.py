"""CrewAI's LLM call events -> probe-rollout/v1 model calls: times, response id, finish reason, usage, errors."""

from __future__ import annotations

import re
from typing import Any, cast

from orchestrator.harnesses.errors_text import transport_category
from orchestrator.harnesses.values import count, iso, moment, nonempty
from orchestrator.records import ModelCall, TokenStats, token_stats

__all__ = ["failed_call", "protocol_of", "reply_call", "reported_llm"]

# The SDKs' status errors start with the HTTP status ("Error code: 429 - {...}" from openai and anthropic).
_STATUS = re.compile(r"(?:Error code: |^\s*)(\d{3})\b")


def reported_llm(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The LLM CrewAI reported its agent holding (its `agent_execution_started` event): provider, api, retries."""
    for e in events:
        agent = e.get("agent") if e.get("type") == "agent_execution_started" else None
        llm = agent.get("llm") if isinstance(agent, dict) else None
        if isinstance(llm, dict):
            return llm
    return {}


def protocol_of(llm: dict[str, Any]) -> str | None:
    """The API CrewAI's LLM spoke: Anthropic's provider speaks Messages, OpenAI's its `api` (completions or
    responses); none when CrewAI reported no LLM."""
    provider = nonempty(llm.get("provider")) or nonempty(llm.get("llm_type"))
    if provider == "anthropic":
        return "messages"
    if provider == "openai":
        return "responses" if llm.get("api") == "responses" else "chat"
    return provider


def _time(value: Any) -> str | None:
    return iso(moment(value))


def reply_call(
    cid: str, invocation: str, protocol: str | None, start: dict[str, Any], end: dict[str, Any]
) -> ModelCall:
    record: dict[str, Any] = {
        "model_call_id": cid,
        "started_at": _time(start.get("timestamp")),
        "completed_at": _time(end.get("timestamp")),
        "protocol": protocol,
        "status_code": 200,
        "response_id": nonempty(end.get("response_id")),
        "finish_reason": nonempty(end.get("finish_reason")),
        "error_category": None,
        "token_stats": _tokens(end.get("usage")),
        "invocation_id": invocation,
    }
    return cast(ModelCall, record)


def failed_call(
    cid: str, invocation: str, protocol: str | None, start: dict[str, Any], end: dict[str, Any] | None
) -> ModelCall:
    error = nonempty(end.get("error")) if end else None
    found = _STATUS.search(error or "")
    status = int(found.group(1)) if found else None
    category = f"http_{status}" if status is not None else transport_category(error) or "error"
    record: dict[str, Any] = {
        "model_call_id": cid,
        "started_at": _time(start.get("timestamp")),
        "completed_at": _time(end.get("timestamp")) if end else None,
        "protocol": protocol,
        "status_code": status,
        "response_id": None,
        "finish_reason": None,
        "error_category": category if end else "unfinished",
        "error": error,
        "token_stats": token_stats(),
        "invocation_id": invocation,
    }
    return cast(ModelCall, record)


def _tokens(usage: Any) -> TokenStats:
    """CrewAI's usage dict: OpenAI's names (prompt_tokens, completion_tokens) or Anthropic's (input_tokens,
    output_tokens), with its own cached_prompt_tokens; a count it left out stays unknown."""
    u = usage if isinstance(usage, dict) else {}
    prompt = count(u.get("prompt_tokens")) if "prompt_tokens" in u else count(u.get("input_tokens"))
    completion = count(u.get("completion_tokens")) if "completion_tokens" in u else count(u.get("output_tokens"))
    return token_stats(
        prompt=prompt,
        completion=completion,
        reasoning=count(u.get("reasoning_tokens")),
        total=count(u.get("total_tokens")),
        cached=count(u.get("cached_prompt_tokens")),
    )
