"""A model call as a rollout records it (probe-rollout/v1 `model_calls[]`), with its token counts."""
# No `from __future__ import annotations`: TypedDict reads NotRequired/Required from evaluated annotations.

from typing import Any, NotRequired, TypedDict

__all__ = ["ModelCall", "TokenStats", "token_stats"]


class TokenStats(TypedDict):
    """Token counts of one call; a count the harness did not report is None, never 0."""

    prompt: int | None
    completion: int | None
    reasoning: int | None
    total: int | None
    cached: int | None


class ModelCall(TypedDict):
    """One model attempt, failed ones included. Key order is the normalizer's: it is what rollout.json holds."""

    model_call_id: str
    started_at: str | None
    completed_at: str | None
    protocol: str
    request: NotRequired[Any]
    response: NotRequired[Any]
    status_code: int | None
    response_id: str | None
    finish_reason: str | None
    error_category: str | None
    error: NotRequired[Any]
    # The wait before the retry as the harness records it (never computed from times).
    retry_delay_ms: NotRequired[float | None]
    token_stats: TokenStats
    invocation_id: str | None


def token_stats(
    prompt: int | None = None,
    completion: int | None = None,
    reasoning: int | None = None,
    total: int | None = None,
    cached: int | None = None,
) -> TokenStats:
    """Token counts in the schema's order; each one not given stays unknown."""
    return {"prompt": prompt, "completion": completion, "reasoning": reasoning, "total": total, "cached": cached}
