"""Turns Gemini CLI's two records of a run into one probe-rollout/v1 dict, saying which record each fact came from.

The chat recording (`session`) is the first source: replies (steps), tool calls and results, the history, the
answer, each reply's tokens. It records no failed attempt, status, response id or time of a request: those come from
the OpenTelemetry file (`otel`), whose `gemini_cli.api_response` / `api_error` events are every attempt. Where both
record a fact (a reply's tokens, a tool call, the answer), the rollout holds the session's and
`provenance.corroboration` what the telemetry says of it, for `sources.agree` to hold the two equal.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from orchestrator.harnesses.base import NormalizeError
from orchestrator.harnesses.gemini_cli import records
from orchestrator.harnesses.gemini_cli.calls import join_calls, main_role
from orchestrator.harnesses.gemini_cli.corroborate import Corroborator, token_totals
from orchestrator.harnesses.gemini_cli.session import ChatSession, read_sessions
from orchestrator.harnesses.gemini_cli.telemetry import OtelAttempt, attempts
from orchestrator.harnesses.otel import Telemetry, read_export
from orchestrator.records import (
    Gap,
    Outcome,
    Provenance,
    Rollout,
    RolloutBuilder,
    outcome,
)

__all__ = ["build_rollout"]

SOURCES = {
    "session": "Gemini CLI's chat recording, ~/.gemini/tmp/<project>/chats/session-*.jsonl",
    "otel": "Gemini CLI's OpenTelemetry file (telemetry target `local`): gemini_cli.* and gen_ai.* log records, spans, "
    "metrics",
}
_ALWAYS_GAPS: list[Gap] = [
    {
        "code": "model_calls.finish_reason_translated",
        "detail": "Gemini CLI's telemetry keeps the GenAI conventions' finish reason of each stream event (stop, "
        "length, content_filter), a missing one written as stop; finish_reason is the Gemini value the last one is "
        "made from",
    },
    {
        "code": "model_calls.status_code_implied",
        "detail": "Gemini CLI's telemetry gives every reply it read to the end status 200 (set by it, not read from "
        "the wire); a failed attempt keeps the status of the error it got",
    },
]
_NO_TELEMETRY: list[Gap] = [
    {
        "code": "model_calls.failed_attempts_unrecorded",
        "detail": "without its OpenTelemetry file Gemini CLI records no failed or retried attempt: the chat recording "
        "keeps replies only",
        "labels": ["E1", "E7"],
    },
    {
        "code": "model_calls.response_id_unrecorded",
        "detail": "the chat recording keeps no provider response id (its message ids are its own)",
        "labels": ["E1"],
    },
    {
        "code": "model_calls.status_code_inferred",
        "detail": "the chat recording keeps no HTTP status: a recorded reply is given 200",
    },
]


def _read(native_dir: Path) -> tuple[list[ChatSession], Telemetry | None]:
    sessions = read_sessions(native_dir / ".gemini")
    path = native_dir / ".gemini-probe" / "telemetry.log"
    telemetry = read_export(path) if path.is_file() and not path.is_symlink() else None
    if not sessions and (telemetry is None or not telemetry.logs):
        raise NormalizeError("Gemini CLI left no chat recording (~/.gemini/tmp/*/chats/) and no telemetry")
    return sessions, telemetry


def build_rollout(native_dir: Path) -> Rollout:
    sessions, telemetry = _read(native_dir)
    main = sessions[0] if sessions else ChatSession(file="")
    invocation = main.session_id
    replies = records.replies(main)
    b = RolloutBuilder("gemini-cli", None, _ALWAYS_GAPS if telemetry is not None else _NO_TELEMETRY)
    for s in sessions:
        for problem in s.problems:
            b.gap("native.session_unreadable", f"{s.file}: {problem}")
    facts: dict[str, str] = {"": "session"}
    check = Corroborator()
    otel = attempts(telemetry) if telemetry is not None else []
    if telemetry is not None:
        for problem in telemetry.problems[:20]:
            b.gap("native.telemetry_unreadable", problem)
        facts["/model_calls"] = "otel"
    steps, of_reply = join_calls(b, replies, otel, invocation, facts, check)
    for n, (refs, k) in enumerate(steps):
        reply = replies[k] if k is not None else None
        started = next((c["started_at"] for c in b.calls if c["model_call_id"] in refs and c["started_at"]), None)
        b.step(n + 1, invocation, reply.timestamp if reply is not None and reply.timestamp else started, refs)
        for requested in reply.calls if reply is not None else []:
            b.tool(records.tool_record(requested, invocation, n + 1))
    totals = token_totals(telemetry) if telemetry is not None else None
    if totals is not None:
        facts["/invocations/0/token_totals"] = "otel"
    b.invocation(invocation or "session", records.conversation(main), token_totals=totals)
    result = _outcome(replies, otel, facts)
    if telemetry is not None:
        last = of_reply.get(len(replies) - 1) if replies else None
        check.telemetry(b, telemetry, last, result)
    provenance: Provenance = {"retry_placement": "inferred" if telemetry is not None else "recorded"}
    provenance |= {"sources": {k: v for k, v in SOURCES.items() if k == "session" or telemetry is not None}}
    provenance |= {"facts": facts}
    if check.entries:
        provenance["corroboration"] = check.entries
    return b.build(
        result,
        rollout_id=invocation,
        provenance=provenance,
        extensions={"gemini_cli": _extensions(sessions, telemetry)},
    )


def _outcome(replies: list[records.Reply], otel: list[OtelAttempt], facts: dict[str, str]) -> Outcome:
    last = replies[-1] if replies else None
    if last is not None and last.text and not last.calls:
        return outcome("completed", final_answer=last.text)
    main = [a for a in otel if main_role(a)]
    if main and main[-1].ended and not main[-1].ok:
        # The chat recording keeps no error; the telemetry's last attempt is one the run did not get past.
        facts["/outcome"] = "otel"
        error = main[-1]
        reason = error.error.get("error", {}).get("message") if isinstance(error.error, dict) else error.error
        kind = f"http_{error.status_code}" if error.status_code else (error.error_type or "api_error")
        return outcome("error", failure_kind=kind, failure_reason=reason if isinstance(reason, str) else None)
    return outcome("unknown")


def _extensions(sessions: list[ChatSession], telemetry: Telemetry | None) -> dict[str, Any]:
    out: dict[str, Any] = {"sessions": [s.file for s in sessions]}
    if telemetry is not None:
        out["telemetry"] = {
            "logs": len(telemetry.logs),
            "spans": len(telemetry.spans),
            "metric_exports": telemetry.exports,
        }
    return out
