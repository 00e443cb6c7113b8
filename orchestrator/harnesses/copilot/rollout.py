"""Turns Copilot CLI's own records into a probe-rollout/v1 rollout, using only what Copilot recorded."""

from __future__ import annotations

from typing import Any, cast

from orchestrator.harnesses.copilot.calls import (
    Attempt,
    attempts_from_session,
    attempts_from_stream,
    model_call,
    tokens,
    usage_by_id,
)
from orchestrator.harnesses.copilot.history import conversation, requests, tool_records
from orchestrator.harnesses.copilot.native import CopilotNative, Event
from orchestrator.harnesses.values import integer, nonempty
from orchestrator.records import (
    Compaction,
    Gap,
    ModelCall,
    Outcome,
    Rollout,
    RolloutBuilder,
    TokenStats,
    gap,
    outcome,
    token_stats,
    unique_gaps,
)

__all__ = ["build_rollout"]

_ALWAYS_GAPS: list[Gap] = [
    {
        "code": "model_calls.status_code_implied",
        "detail": "Copilot logs the HTTP status of a failed call (model.call_failure) but none for a reply it "
        "accepted: a success is given 200",
    },
    {
        "code": "model_calls.total_tokens_unrecorded",
        "detail": "Copilot's usage records keep input, output, cache-read, cache-write and reasoning tokens, no "
        "total: token_stats.total is null",
        "labels": ["E2"],
    },
]
_TRANSLATED: Gap = {
    "code": "model_calls.finish_reason_translated",
    "detail": "Copilot records every protocol's finish reason in OpenAI Chat's vocabulary (tool_calls, stop, "
    "length); finish_reason is the wire value each is made from for the call's protocol, the raw value is kept "
    "in extensions",
}
_NO_STREAM: Gap = {
    "code": "model_calls.failed_attempts_unrecorded",
    "detail": "the stdout stream holds no model dispatch: calls are read from the session's usage records, which "
    "Copilot writes for accepted replies only, so failed attempts and all call times are unrecorded",
    "labels": ["E1", "E7"],
}


def build_rollout(native: CopilotNative) -> Rollout:
    start = native.start
    version = nonempty(start.data.get("copilotVersion")) if start else None
    b = RolloutBuilder("copilot", version, _ALWAYS_GAPS)
    b.gaps += [gap(code, detail) for code, detail in native.problems]
    sid = native.session_id
    attempts = attempts_from_stream(native.stream)
    if not attempts:
        attempts = attempts_from_session(native.session)
        if attempts:
            b.gaps.append(_NO_STREAM)
    usage = usage_by_id(native.session)
    calls = [model_call(a, usage.get(a.response_id or ""), f"{sid}/call-{n}", sid) for n, a in enumerate(attempts, 1)]
    for c in calls:
        b.call(c)
    if any(c["protocol"] in ("responses", "messages") and c["finish_reason"] for c in calls):
        b.gaps.append(_TRANSLATED)
    unfinished = [c["model_call_id"] for a, c in zip(attempts, calls, strict=True) if a.outcome is None]
    if unfinished:
        b.gap(
            "model_calls.unfinished",
            f"Copilot logged the dispatch of {', '.join(unfinished)} (model.call_start) and nothing after it: how "
            "it ended, when, and its protocol are unrecorded",
            ["E1"],
        )
    unmatched = [a.response_id for a in attempts if a.outcome == "success" and a.response_id not in usage]
    if unmatched:
        b.gap(
            "model_calls.usage_unrecorded",
            f"no usage record in the session log names the reply(s) {', '.join(map(str, unmatched))}",
            ["E2"],
        )
    step_of_turn = _steps(b, native, attempts, calls)
    tool_records(b, native.session, sid, step_of_turn)
    b.invocation(sid, conversation(native.session), token_totals=_totals(native.usage))
    compactions = _compactions(native.session, sid, step_of_turn)
    if compactions:
        b.gap(
            "compactions.calls_unrecorded",
            "Copilot logs each compaction's model calls only as a sum (compactionTokensUsed: how many requests, "
            "their tokens), with no response id, time or status of any: a compaction names no call",
            ["E1"],
        )
    b.gaps = unique_gaps(b.gaps)
    return b.build(
        _outcome(native),
        rollout_id=sid,
        # Copilot ties each dispatch, retries included, to the turn it served (model.call_start's turnId).
        provenance={"retry_placement": "recorded"},
        compactions=compactions,
        extensions={"copilot": _extensions(native, attempts, usage)},
    )


def _steps(b: RolloutBuilder, native: CopilotNative, attempts: list[Attempt], calls: list[ModelCall]) -> dict[str, int]:
    """One step per turn Copilot recorded (assistant.turn_start's turnId), in order, stamped when the turn started;
    its calls are the dispatches Copilot made for that turn, retries included. Returns the step of each turn id."""
    started = {
        str(e.data.get("turnId")): e.timestamp for e in native.session if e.type == "assistant.turn_start" and e.main
    }
    step_of_turn: dict[str, int] = {}
    refs: dict[int, list[str]] = {}
    for a, c in zip(attempts, calls, strict=True):
        if a.turn_id is None:
            continue  # read from a usage record alone, or a dispatch whose turn id is no string
        number = step_of_turn.setdefault(a.turn_id, len(step_of_turn) + 1)
        refs.setdefault(number, []).append(c["model_call_id"])
    for turn, number in step_of_turn.items():
        b.step(number, native.session_id, started.get(turn), refs[number])
    if any(a.turn_id is None for a in attempts):
        b.gap(
            "steps.turn_unrecorded",
            "calls whose dispatch names no turn (read from usage records alone, or a turn id that is no "
            "string) are in no step",
            ["E9"],
        )
    return step_of_turn


def _compactions(session: list[Event], sid: str, step_of_turn: dict[str, int]) -> list[Compaction] | None:
    """Each compaction Copilot applied, in the turn it ran in. Its calls are logged only as a sum
    (compactionTokensUsed), never one by one: no call is named."""
    found: list[Compaction] = []
    turn: str | None = None
    for e in session:
        if e.type == "assistant.turn_start" and e.main:
            turn = nonempty(e.data.get("turnId"))
        if e.type == "session.compaction_complete" and e.data.get("success") is True:
            found.append(
                {
                    "invocation_id": sid,
                    "step_no": step_of_turn.get(turn or ""),
                    "model_call_refs": [],
                    "timestamp": e.timestamp,
                }
            )
    return found or None


def _totals(usage: dict[str, Any] | None) -> TokenStats | None:
    """The usage file's session figures, summed over its models (Copilot's own accounting)."""
    metrics = usage.get("modelMetrics") if usage else None
    if not isinstance(metrics, dict) or not metrics:
        return None
    parts = [m.get("usage") if isinstance(m, dict) else None for m in metrics.values()]
    if not all(isinstance(p, dict) for p in parts):
        return None
    each = [tokens(cast(dict[str, Any], p)) for p in parts]

    def total(key: str) -> int | None:
        values = [t[key] for t in each]  # type: ignore[literal-required]
        return None if any(v is None for v in values) else sum(cast(list[int], values))

    return token_stats(prompt=total("prompt"), completion=total("completion"), cached=total("cached"))


def _outcome(native: CopilotNative) -> Outcome:
    """The session's last word: an error it logged, or its last reply when that asked for no tool."""
    ends = [e for e in native.session if e.type in ("session.error", "assistant.message") and e.main]
    last = ends[-1] if ends else None
    if last is not None and last.type == "session.error":
        return outcome("error", failure_kind=last.text("errorType") or "error", failure_reason=last.text("message"))
    result = native.result
    code = integer(result.data.get("exitCode")) if result else None
    if code not in (0, None):
        return outcome(
            "error", failure_kind="exit_code", failure_reason=f"the stream's result line gives exit code {code}"
        )
    if last is not None and not requests(last) and last.text("content"):
        return outcome("completed", final_answer=last.text("content"))
    # No reply, or the last one asked for tools and nothing came after it: the run stopped midway.
    return outcome("unknown")


def _extensions(native: CopilotNative, attempts: list[Attempt], usage: dict[str, dict[str, Any]]) -> dict[str, Any]:
    result = native.result
    return {
        "turns": [a.turn_id for a in attempts],
        # The finish reasons as Copilot recorded them (Chat's vocabulary on every protocol).
        "finish_reasons": [nonempty(usage.get(a.response_id or "", {}).get("finishReason")) for a in attempts],
        "retry_reasons": [
            nonempty(e.data.get("reason")) for e in native.stream if e.type == "assistant.turn_retry" and e.main
        ],
        "exit_code": integer(result.data.get("exitCode")) if result else None,
    }
