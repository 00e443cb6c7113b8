"""Gemini CLI's model calls: every attempt its telemetry records, joined in order to the replies its chat recording
keeps, each fact taken from the record that has it and the other record's word on it kept for `sources.agree`."""

from __future__ import annotations

from orchestrator.harnesses.gemini_cli.corroborate import Corroborator
from orchestrator.harnesses.gemini_cli.records import Reply, gemini_tokens
from orchestrator.harnesses.gemini_cli.telemetry import OtelAttempt
from orchestrator.records import ModelCall, RolloutBuilder, TokenStats, token_stats

__all__ = ["join_calls", "main_role"]

# The GenAI conventions' finish reasons Gemini CLI writes, and the Gemini value each is made from (the first of
# several).
_FINISH = {"stop": "STOP", "length": "MAX_TOKENS", "content_filter": "SAFETY", "error": "MALFORMED_FUNCTION_CALL"}


def main_role(a: OtelAttempt) -> bool:
    """A request of the agent's own turns (its side requests, compression or checks, have roles of their own)."""
    return a.role in (None, "main")


def otel_tokens(a: OtelAttempt) -> TokenStats:
    """The telemetry's counts of a reply in the rollout's convention (its output count leaves the thoughts out)."""
    t = a.tokens
    return gemini_tokens(
        t.get("input_token_count"),
        t.get("output_token_count"),
        t.get("thoughts_token_count"),
        t.get("total_token_count"),
        t.get("cached_content_token_count"),
    )


def _otel_call(n: int, a: OtelAttempt, invocation: str | None) -> ModelCall:
    status = a.status_code
    if a.ok:
        category = None
    elif not a.ended:
        category = "unfinished"  # sent, and no reply or error recorded: the run ended during it
    else:
        category = f"http_{status}" if status else (a.error_type or "api_error")
    finish = a.finish_reasons[-1] if a.ok and a.finish_reasons else None
    call: ModelCall = {
        "model_call_id": f"otel-{n}",
        "started_at": a.started_at,
        "completed_at": a.completed_at,
        "protocol": "gemini",
        "status_code": status,
        "response_id": a.response_id if a.ok else None,
        "finish_reason": _FINISH.get(finish, finish) if finish is not None else None,
        "error_category": category,
        "token_stats": token_stats(),
        "invocation_id": invocation,
    }
    if not a.ok and a.ended:
        call["error"] = a.error
    return call


def _session_call(reply: Reply, call_id: str, invocation: str | None, started: str | None = None) -> ModelCall:
    """A reply the chat recording keeps and the telemetry does not end: given 200, as a stored reply."""
    return {
        "model_call_id": call_id,
        "started_at": started,
        "completed_at": reply.timestamp,
        "protocol": "gemini",
        "status_code": 200,
        "response_id": None,
        "finish_reason": None,
        "error_category": None,
        "token_stats": reply.tokens or token_stats(),
        "invocation_id": invocation,
    }


# A step's call ids, and the index of the chat recording's reply that ended it (None: a reply the recording does not
# keep, or failed attempts no reply followed).
Step = tuple[list[str], int | None]


def _discarded(a: OtelAttempt) -> bool:
    """A reply Gemini CLI threw away: it ended in a function call it could not parse (Gemini's MALFORMED_FUNCTION_CALL,
    the conventions' `error`), so it asked again, and its chat recording keeps no message of it."""
    return a.ok and bool(a.finish_reasons) and a.finish_reasons[-1] == "error"


def join_calls(
    b: RolloutBuilder,
    replies: list[Reply],
    otel: list[OtelAttempt],
    invocation: str | None,
    facts: dict[str, str],
    check: Corroborator,
) -> tuple[list[Step], dict[int, OtelAttempt]]:
    """Record every call; returns the steps in order (a step per reply, one per reply the recording does not keep,
    then one for attempts no reply followed) and the telemetry's attempt of each reply that has one.

    The n-th reply the telemetry ended, leaving out those Gemini CLI threw away, is the n-th reply recorded; the
    telemetry's requests with no end (its last events lost at exit, or the run killed) take the replies left over,
    in order; failed and unended attempts belong to the step of the reply after them (`retry_placement: inferred`).
    """
    main = [a for a in otel if main_role(a)]
    ok = sum(1 for a in main if a.ok and not _discarded(a))
    unended = [a for a in main if not a.ended]
    late = {id(a): replies[ok + k] for k, a in enumerate(unended) if ok + k < len(replies)}
    steps: list[Step] = []
    of_reply: dict[int, OtelAttempt] = {}
    pending: list[str] = []
    paired = 0
    for n, a in enumerate(otel, start=1):
        index = len(b.calls)
        if not main_role(a):
            b.call(_otel_call(n, a, invocation))
            b.gap("model_calls.side_request", f"otel-{n}: a {a.role} request, in no step", ["E9"])
            continue
        if id(a) in late:
            # The chat recording has the reply: the telemetry records only that it was asked for.
            reply = late[id(a)]
            pending.append(b.call(_session_call(reply, f"otel-{n}", invocation, a.started_at)))
            facts[f"/model_calls/{index}"] = "session"
            facts[f"/model_calls/{index}/started_at"] = "otel"
            check.add(f"/model_calls/{index}/completed_at", "otel", None)
        else:
            pending.append(b.call(_otel_call(n, a, invocation)))
            if not a.ok:
                continue
            if paired >= len(replies) or _discarded(a):
                # A reply the telemetry records and the chat recording does not: its counts are the telemetry's.
                b.calls[index]["token_stats"] = otel_tokens(a)
                check.add(f"/model_calls/{index}", "session", None)
                steps.append((pending, None))
                pending = []
                continue
            reply = replies[paired]
            # The chat recording's tokens are the rollout's; the telemetry's for the same reply corroborate them.
            b.calls[index]["token_stats"] = reply.tokens or token_stats()
            facts[f"/model_calls/{index}/token_stats"] = "session"
            check.add(f"/model_calls/{index}/token_stats", "otel", dict(otel_tokens(a)))
        steps.append((pending, paired))
        of_reply[paired] = a
        pending = []
        paired += 1
    for k in range(paired, len(replies)):
        # A reply neither record's request or end accounts for (telemetry off, or all of it lost).
        index = len(b.calls)
        steps.append(([b.call(_session_call(replies[k], f"session-{k + 1}", invocation))], k))
        facts[f"/model_calls/{index}"] = "session"
        if otel:
            check.add(f"/model_calls/{index}", "otel", None)
    if pending:
        steps.append((pending, None))
    return steps, of_reply
