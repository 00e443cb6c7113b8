"""Gaps: the facts Hermes's own records have no place for, named so checks can tell absent from wrong."""

from __future__ import annotations

from orchestrator.records import Gap

__all__ = ["ALWAYS_GAPS"]

# Facts Hermes's store has no place for, whatever happened in the run: named in every rollout.
ALWAYS_GAPS: list[Gap] = [
    {
        "code": "model_calls.response_id_unrecorded",
        "detail": "state.db stores each reply as a message without the provider response id or HTTP status; "
        "a stored reply is one Hermes received whole (status_code 200), its response_id is null",
        "labels": ["E1"],
    },
    {
        "code": "model_calls.usage_aggregated",
        "detail": "token counts exist only as per-session sums (sessions.input_tokens, ...); per-call counts are null",
        "labels": ["E2"],
    },
    {
        "code": "model_calls.failed_attempts_unrecorded",
        "detail": "attempts Hermes retried (HTTP errors, timeouts, cut streams) are recorded nowhere; only the "
        "attempt it finally gave up on is dumped to sessions/request_dump_*.json",
        "labels": ["E1", "E7", "E8", "E9"],
    },
    {
        "code": "model_calls.started_at_unrecorded",
        "detail": "no request start time is stored; completed_at is when Hermes persisted the reply or the dump",
    },
]
