"""Turns Hermes's native records into a probe-rollout/v1 dict, using only what Hermes recorded."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from orchestrator.harnesses.hermes.gaps import ALWAYS_GAPS, unique
from orchestrator.harnesses.hermes.native import Message, NativeLog, RequestDump, Session, epoch_utc, naive_utc

__all__ = ["build_rollout"]

_NO_TOKENS: dict[str, int | None] = {
    "prompt": None,
    "completion": None,
    "reasoning": None,
    "total": None,
    "cached": None,
}
_ROLES = ("system", "user", "assistant", "tool")


@dataclass
class _Call:
    record: dict[str, Any]
    reply: Message | None  # the stored reply of a successful call; None for a failed attempt
    at: datetime | None  # when Hermes recorded it: the order of attempts


def build_rollout(native: NativeLog) -> dict[str, Any]:
    sessions = {s.id: s for s in native.sessions}
    gaps = copy.deepcopy(ALWAYS_GAPS)  # the rollout is the caller's to change
    gaps += [{"code": code, "detail": detail} for code, detail in native.problems]
    gaps += [
        {"code": "conversation.unknown_role", "detail": f"message {m.row_id} has role {m.role!r}", "labels": ["E4"]}
        for s in native.sessions
        for m in s.messages
        if m.role not in _ROLES
    ]
    dumps_of: dict[str | None, list[RequestDump]] = {}
    for d in native.dumps:
        dumps_of.setdefault(d.session_id if d.session_id in sessions else None, []).append(d)
    model_calls: list[dict[str, Any]] = []
    invocations: list[dict[str, Any]] = []
    steps: list[dict[str, Any]] = []
    tool_calls: list[dict[str, Any]] = []
    for s in native.sessions:
        calls = _calls(s, dumps_of.get(s.id, []))
        model_calls += [c.record for c in calls]
        invocations.append(
            {
                "invocation_id": s.id,
                "parent_invocation_id": s.parent_id,
                "model_call_refs": [c.record["model_call_id"] for c in calls],
                "conversation": _conversation(s),
                "token_totals": _totals(s.aggregates),
            }
        )
        session_steps, step_of_reply = _steps(s, calls)
        steps += session_steps
        tool_calls += _tool_calls(s, step_of_reply, gaps)
    # A dump naming no recorded session is still an attempt Hermes recorded: kept, owned by nobody.
    for d in dumps_of.get(None, []):
        model_calls.append(_failed_call(d, None).record)
    roots = [s for s in native.sessions if s.parent_id is None or s.parent_id not in sessions]
    root = roots[0] if roots else None
    return {
        "schema": "probe-rollout/v1",
        "harness": {"name": "hermes", "version": None},  # Hermes writes no version into its logs
        "task_id": None,
        "rollout_id": root.id if root else None,
        "model_calls": model_calls,
        "invocations": invocations,
        "steps": steps,
        "tool_calls": tool_calls,
        "outcome": _outcome(root, sorted(dumps_of.get(root.id, []) if root else [], key=_dump_order)),
        # Provenance: Hermes dumps a request it gave up on apart from its messages: it is placed in the step of the
        # next reply.
        "provenance": {"retry_placement": "inferred"},
        "gaps": unique(gaps),
        "extensions": {"hermes": _extensions(native)},
    }


def _calls(s: Session, dumps: list[RequestDump]) -> list[_Call]:
    calls = [_reply_call(s, m) for m in s.messages if m.role == "assistant"]
    calls += [_failed_call(d, s.id) for d in dumps]
    # Hermes gives attempts no sequence number; the times it recorded them are the only order there is.
    far = datetime.max.replace(tzinfo=UTC)
    return sorted(calls, key=lambda c: c.at or far)


def _reply_call(s: Session, m: Message) -> _Call:
    at = epoch_utc(m.timestamp)
    record = {
        "model_call_id": f"{s.id}/message/{m.row_id}",
        "started_at": None,
        "completed_at": _iso(at),
        "protocol": "chat",  # the `custom` provider speaks Chat Completions; Hermes stores no api_mode per reply
        "status_code": 200,
        "response_id": None,
        "finish_reason": m.finish_reason,
        "error_category": None,
        "token_stats": dict(_NO_TOKENS),
        "invocation_id": s.id,
    }
    return _Call(record, m, at)


def _failed_call(d: RequestDump, owner: str | None) -> _Call:
    at = naive_utc(d.timestamp)
    status = d.error.get("status_code")
    status = status if isinstance(status, int) and not isinstance(status, bool) else None
    record = {
        "model_call_id": f"{d.session_id}/dump/{d.name}",
        "started_at": None,
        "completed_at": _iso(at),
        "protocol": "responses" if (d.url or "").endswith("/responses") else "chat",
        "status_code": status,
        "response_id": None,
        "finish_reason": None,
        "error_category": _category(status, d.error),
        "error": d.error,
        "token_stats": dict(_NO_TOKENS),
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


def _steps(s: Session, calls: list[_Call]) -> tuple[list[dict[str, Any]], dict[int, int]]:
    """A step is the reply that ended it plus the failed attempts recorded before it (retries of that step)."""
    steps: list[dict[str, Any]] = []
    step_of_reply: dict[int, int] = {}
    pending: list[str] = []
    for c in calls:
        pending.append(c.record["model_call_id"])
        if c.reply is not None:
            step_of_reply[c.reply.row_id] = len(steps) + 1
            steps.append(_step(s, len(steps) + 1, _started(s, c.reply), pending))
            pending = []
    if pending:
        steps.append(_step(s, len(steps) + 1, _started(s, None), pending))
    return steps, step_of_reply


def _step(s: Session, number: int, at: datetime | None, refs: list[str]) -> dict[str, Any]:
    return {"step_no": number, "invocation_id": s.id, "timestamp": _iso(at), "model_call_refs": refs}


def _started(s: Session, reply: Message | None) -> datetime | None:
    """Hermes stores no step start: a step begins once the message it answers (task or tool result) was stored."""
    before = [m for m in s.messages if m.role != "assistant" and (reply is None or m.row_id < reply.row_id)]
    return epoch_utc(before[-1].timestamp) if before else epoch_utc(s.started_at)


def _conversation(s: Session) -> list[dict[str, Any]]:
    conv: list[dict[str, Any]] = []
    if s.system_prompt:
        conv.append({"role": "system", "content": s.system_prompt})
    for m in s.messages:
        if m.role not in _ROLES:
            continue  # named as a gap by build_rollout; guessing a role would rewrite the history
        entry: dict[str, Any] = {"role": m.role}
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


def _tool_calls(s: Session, step_of_reply: dict[int, int], gaps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    results = {m.tool_call_id: m for m in s.messages if m.role == "tool" and m.tool_call_id}
    out = []
    for m in s.messages:
        for t in m.tool_requests if m.role == "assistant" else ():
            result = results.get(t.tool_call_id)
            if result is None:
                continue  # requested but no execution recorded: not a tool record
            exit_code = _exit_code(result.content)
            if exit_code is None:
                gaps.append(
                    {
                        "code": "tool_calls.exit_code_unrecorded",
                        "detail": "a tool result carries no exit_code, so its status is unknown",
                        "labels": ["E5"],
                    }
                )
            out.append(
                {
                    "tool_call_id": t.tool_call_id,
                    "tool_name": t.tool_name,
                    "arguments": t.arguments,
                    "status": None if exit_code is None else ("succeeded" if exit_code == 0 else "failed"),
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
        data = json.loads(content or "")
    except json.JSONDecodeError:
        return None
    code = data.get("exit_code") if isinstance(data, dict) else None
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def _outcome(root: Session | None, dumps: list[RequestDump]) -> dict[str, Any]:
    last = root.messages[-1] if root and root.messages else None
    if last is not None and last.role == "assistant" and not last.tool_requests and last.content:
        return {"final_answer": last.content, "status": "completed", "failure_kind": None, "failure_reason": None}
    if dumps:
        # No final reply, and Hermes dumped the request it gave up on: the run ended in that error.
        d = dumps[-1]
        message = d.error.get("message")
        return {
            "final_answer": None,
            "status": "error",
            "failure_kind": d.reason or "model_error",
            "failure_reason": message if isinstance(message, str) else None,
        }
    return {"final_answer": None, "status": "unknown", "failure_kind": None, "failure_reason": None}


def _totals(aggregates: dict[str, Any]) -> dict[str, int | None]:
    """Hermes's session totals in the rollout's convention: its input_tokens leave the cache reads and writes out,
    the rollout's prompt counts them in (cached is part of prompt). Hermes keeps no total; a column it left empty
    stays null, and so does a sum with an empty part."""

    def count(key: str) -> int | None:
        value = aggregates.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None

    inp, read, write = count("input_tokens"), count("cache_read_tokens"), count("cache_write_tokens")
    prompt = None if inp is None or read is None or write is None else inp + read + write
    return {
        "prompt": prompt,
        "completion": count("output_tokens"),
        "reasoning": count("reasoning_tokens"),
        "total": None,
        "cached": read,
    }


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


def _iso(value: datetime | None) -> str | None:
    return value.isoformat(timespec="microseconds").replace("+00:00", "Z") if value else None
