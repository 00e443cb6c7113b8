"""Turns Hermes's native records into a probe-rollout/v1 dict, using only what Hermes recorded."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from orchestrator import records
from orchestrator.harnesses.hermes.gaps import ALWAYS_GAPS
from orchestrator.harnesses.hermes.native import Message, NativeLog, RequestDump, Session, epoch_utc, naive_utc
from orchestrator.harnesses.jsonl import loads_line
from orchestrator.harnesses.values import bounded, count, integer, iso
from orchestrator.records import (
    Gap,
    ModelCall,
    Outcome,
    Rollout,
    RolloutBuilder,
    TokenStats,
    ToolRecord,
    exit_status,
    gap,
    outcome,
    token_stats,
    unique_gaps,
)

__all__ = ["build_rollout"]

_ROLES = ("system", "user", "assistant", "tool")


@dataclass
class _Call:
    record: ModelCall
    reply: Message | None  # the stored reply of a successful call; None for a failed attempt
    at: datetime | None  # when Hermes recorded it: the order of attempts


def build_rollout(native: NativeLog) -> Rollout:
    sessions = {s.id: s for s in native.sessions}
    b = RolloutBuilder("hermes", None, ALWAYS_GAPS)  # Hermes writes no version into its logs
    b.gaps += [gap(code, detail) for code, detail in native.problems]
    b.gaps += [
        gap("conversation.unknown_role", f"message {m.row_id} has role {m.role!r}", ["E4"])
        for s in native.sessions
        for m in s.messages
        if m.role not in _ROLES
    ]
    dumps_of: dict[str | None, list[RequestDump]] = {}
    for d in native.dumps:
        dumps_of.setdefault(d.session_id if d.session_id in sessions else None, []).append(d)
    for s in native.sessions:
        calls = _calls(s, dumps_of.get(s.id, []))
        refs = [b.call(c.record) for c in calls]
        b.invocation(s.id, _conversation(s), parent=s.parent_id, refs=refs, token_totals=_totals(s.aggregates))
        step_of_reply = _steps(b, s, calls)
        for record in _tool_calls(s, step_of_reply, b.gaps):
            b.tool(record)
    # A dump naming no recorded session is still an attempt Hermes recorded: kept, owned by nobody.
    for d in dumps_of.get(None, []):
        b.call(_failed_call(d, None).record)
    roots = [s for s in native.sessions if s.parent_id is None or s.parent_id not in sessions]
    root = roots[0] if roots else None
    b.gaps = unique_gaps(b.gaps)
    return b.build(
        _outcome(root, sorted(dumps_of.get(root.id, []) if root else [], key=_dump_order)),
        rollout_id=root.id if root else None,
        # Hermes dumps a request it gave up on apart from its messages: it is placed in the step of the next reply.
        provenance={"retry_placement": "inferred"},
        extensions={"hermes": _extensions(native)},
    )


def _calls(s: Session, dumps: list[RequestDump]) -> list[_Call]:
    calls = [_reply_call(s, m) for m in s.messages if m.role == "assistant"]
    calls += [_failed_call(d, s.id) for d in dumps]
    # Hermes gives attempts no sequence number; the times it recorded them are the only order there is.
    far = datetime.max.replace(tzinfo=UTC)
    return sorted(calls, key=lambda c: c.at or far)


def _reply_call(s: Session, m: Message) -> _Call:
    at = epoch_utc(m.timestamp)
    record: ModelCall = {
        "model_call_id": f"{s.id}/message/{m.row_id}",
        "started_at": None,
        "completed_at": iso(at),
        "protocol": "chat",  # the `custom` provider speaks Chat Completions; Hermes stores no api_mode per reply
        "status_code": 200,
        "response_id": None,
        "finish_reason": m.finish_reason,
        "error_category": None,
        "token_stats": token_stats(),
        "invocation_id": s.id,
    }
    return _Call(record, m, at)


def _failed_call(d: RequestDump, owner: str | None) -> _Call:
    at = naive_utc(d.timestamp)
    status = integer(d.error.get("status_code"))
    record: ModelCall = {
        "model_call_id": f"{d.session_id}/dump/{d.name}",
        "started_at": None,
        "completed_at": iso(at),
        "protocol": "responses" if (d.url or "").endswith("/responses") else "chat",
        "status_code": status,
        "response_id": None,
        "finish_reason": None,
        "error_category": _category(status, d.error),
        "error": bounded(d.error),
        "token_stats": token_stats(),
        "invocation_id": owner,
    }
    return _Call(record, None, at)


def _category(status: int | None, error: dict[str, Any]) -> str:
    if status is not None:
        return f"http_{status}"
    kind = str(error.get("type") or "").lower()
    if "timeout" in kind:
        return "timeout"
    if "connection" in kind or "protocol" in kind:
        return "connection"
    return kind or "unknown"


def _steps(b: RolloutBuilder, s: Session, calls: list[_Call]) -> dict[int, int]:
    """A step is the reply that ended it plus the failed attempts recorded before it (retries of that step); steps
    are numbered per session. Returns the step of each reply's message row."""
    number = 0
    step_of_reply: dict[int, int] = {}
    pending: list[str] = []
    for c in calls:
        pending.append(c.record["model_call_id"])
        if c.reply is not None:
            number += 1
            step_of_reply[c.reply.row_id] = number
            b.step(number, s.id, iso(_started(s, c.reply)), pending)
            pending = []
    if pending:
        b.step(number + 1, s.id, iso(_started(s, None)), pending)
    return step_of_reply


def _started(s: Session, reply: Message | None) -> datetime | None:
    """Hermes stores no step start: a step begins once the message it answers (task or tool result) was stored."""
    before = [m for m in s.messages if m.role != "assistant" and (reply is None or m.row_id < reply.row_id)]
    return epoch_utc(before[-1].timestamp) if before else epoch_utc(s.started_at)


def _conversation(s: Session) -> list[records.Message]:
    conv: list[records.Message] = []
    if s.system_prompt:
        conv.append({"role": "system", "content": s.system_prompt})
    for m in s.messages:
        if m.role not in _ROLES:
            continue  # named as a gap by build_rollout; guessing a role would rewrite the history
        entry: records.Message = {"role": m.role}
        # Hermes keeps the bytes it really sent in api_content when they differ from the clean stored text.
        entry["content"] = m.api_content if m.api_content is not None else m.content
        if m.role == "assistant" and m.tool_requests:
            entry["tool_calls"] = [
                {"tool_call_id": t.tool_call_id, "tool_name": t.tool_name, "arguments": t.arguments}
                for t in m.tool_requests
            ]
        if m.role == "tool":
            entry["tool_call_id"] = m.tool_call_id
        conv.append(entry)
    return conv


def _tool_calls(s: Session, step_of_reply: dict[int, int], gaps: list[Gap]) -> list[ToolRecord]:
    results = {m.tool_call_id: m for m in s.messages if m.role == "tool" and m.tool_call_id}
    out: list[ToolRecord] = []
    for m in s.messages:
        for t in m.tool_requests if m.role == "assistant" else ():
            result = results.get(t.tool_call_id)
            if result is None:
                continue  # requested but no execution recorded: not a tool record
            exit_code = _exit_code(result.content)
            if exit_code is None:
                gaps.append(
                    gap(
                        "tool_calls.exit_code_unrecorded",
                        "a tool result carries no exit_code, so its status is unknown",
                        ["E5"],
                    )
                )
            out.append(
                {
                    "tool_call_id": t.tool_call_id,
                    "tool_name": t.tool_name,
                    "arguments": t.arguments,
                    "status": None if exit_code is None else exit_status(exit_code),
                    "exit_code": exit_code,
                    "output": result.content,  # the tool message is exactly what went back to the model
                    "invocation_id": s.id,
                    "step_no": step_of_reply.get(m.row_id),
                }
            )
    return out


def _exit_code(content: str | None) -> int | None:
    # The terminal tool answers the model with a JSON object that carries the command's exit code.
    try:
        data = loads_line(content or "")
    except ValueError:
        return None
    return integer(data.get("exit_code")) if isinstance(data, dict) else None


def _outcome(root: Session | None, dumps: list[RequestDump]) -> Outcome:
    last = root.messages[-1] if root and root.messages else None
    if last is not None and last.role == "assistant" and not last.tool_requests and last.content:
        return outcome("completed", final_answer=last.content)
    if dumps:
        # No final reply, and Hermes dumped the request it gave up on: the run ended in that error.
        d = dumps[-1]
        message = d.error.get("message")
        return outcome(
            "error",
            failure_kind=d.reason or "model_error",
            failure_reason=message if isinstance(message, str) else None,
        )
    return outcome("unknown")


def _totals(aggregates: dict[str, Any]) -> TokenStats:
    """Hermes's session totals in the rollout's convention: its input_tokens leave the cache reads and writes out,
    the rollout's prompt counts them in (cached is part of prompt). Hermes keeps no total; a column it left empty
    stays null, and so does a sum with an empty part."""
    inp, read, write = (count(aggregates.get(k)) for k in ("input_tokens", "cache_read_tokens", "cache_write_tokens"))
    prompt = None if inp is None or read is None or write is None else inp + read + write
    return token_stats(
        prompt=prompt,
        completion=count(aggregates.get("output_tokens")),
        reasoning=count(aggregates.get("reasoning_tokens")),
        cached=read,
    )


def _extensions(native: NativeLog) -> dict[str, Any]:
    return {
        "sessions": [
            {
                "id": s.id,
                "source": s.source,
                "model": s.model,
                "end_reason": s.end_reason,
                "api_call_count": s.api_call_count,
                **s.aggregates,
            }
            for s in native.sessions
        ],
        "request_dumps": [{"name": d.name, "reason": d.reason} for d in native.dumps],
    }


def _dump_order(d: RequestDump) -> datetime:
    return naive_utc(d.timestamp) or datetime.min.replace(tzinfo=UTC)
