"""Turns OpenClaw's transcript and runtime trajectory into a probe-rollout/v1 rollout, using only what it recorded."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from orchestrator.harnesses.openclaw.store import Entry, OpenClawNative
from orchestrator.harnesses.pi.calls import FAILED, category, content_text, model_call, status_of
from orchestrator.harnesses.values import integer, string
from orchestrator.records import (
    Gap,
    Message,
    ModelCall,
    Outcome,
    RequestedCall,
    Rollout,
    RolloutBuilder,
    ToolRecord,
    gap,
    outcome,
    unique_gaps,
)

__all__ = ["build_rollout"]

_ALWAYS_GAPS: list[Gap] = [
    {
        "code": "model_calls.status_code_inferred",
        "detail": "OpenClaw stores no HTTP status: a reply it stored whole is given 200, a failed attempt the status "
        "its errorMessage starts with (the provider SDK's error text), else none",
    },
    {
        "code": "model_calls.finish_reason_translated",
        "detail": "OpenClaw stores its own stopReason (stop, toolUse, length); finish_reason is the wire value each "
        "maps from for the message's api",
    },
]
_UNTIMED_GAP: Gap = {
    "code": "model_calls.completed_at_unrecorded",
    "detail": "a failed attempt is kept only in the runtime trajectory's messagesSnapshot, which stamps when the "
    "request started; only the attempt's last message has an end, the time of its `model.completed` event",
    "labels": ["E1"],
}


@dataclass(frozen=True)
class Reply:
    """One assistant message: from the transcript (with its entry), or only from a runtime attempt's snapshot."""

    session_id: str
    ref: str  # the transcript entry id, or `<run id>#<n>` for a snapshot-only message
    # When the transcript appended it (the reply's end), or for a snapshot's last message when the attempt's
    # `model.completed` was stamped; None for any other snapshot message.
    appended_at: str | None
    message: dict[str, Any]

    @property
    def failed(self) -> bool:
        return self.message.get("stopReason") in FAILED


def build_rollout(native: OpenClawNative) -> Rollout:
    b = RolloutBuilder("openclaw", None, _ALWAYS_GAPS)
    b.gaps += [gap(code, detail) for code, detail in native.problems]
    replies = _replies(native)
    if any(r.appended_at is None for r in replies):
        b.gaps.append(_UNTIMED_GAP)
    sessions = list(dict.fromkeys([e.session_id for e in native.entries] + [r.session_id for r in replies]))
    for sid in sessions:
        mine = [r for r in replies if r.session_id == sid]
        calls = [_call(sid, r) for r in mine]
        refs = [b.call(c) for c in calls]
        entries = [e for e in native.entries if e.session_id == sid]
        b.invocation(sid, _conversation(entries), refs=refs)
        step_of = _steps(b, sid, mine, calls)
        for record in _tool_calls(sid, entries, step_of, b.gaps):
            b.tool(record)
    b.gaps = unique_gaps(b.gaps)
    return b.build(
        _outcome(replies, native.result),
        rollout_id=sessions[0] if sessions else None,
        # Failed attempts are kept apart from the transcript: each is placed in the step of the next reply.
        provenance={"retry_placement": "inferred"},
        extensions={"openclaw": _extensions(native, replies)},
    )


def _replies(native: OpenClawNative) -> list[Reply]:
    """Every assistant message once, in the order their requests started: the transcript's, then the failed (and
    any other) ones only a runtime attempt's messagesSnapshot holds."""
    found: dict[tuple[Any, ...], Reply] = {}
    for e in native.entries:
        if e.message.get("role") == "assistant":
            r = Reply(
                e.session_id, string(e.data.get("id")) or f"seq{e.seq}", string(e.data.get("timestamp")), e.message
            )
            found.setdefault(_key(r), r)
    for n, run in enumerate(native.runs):
        event = run.last_event("model.completed") or {}
        done = run.last("model.completed") or {}
        snapshot = done.get("messagesSnapshot")
        messages = snapshot if isinstance(snapshot, list) else []
        last = max(
            (i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "assistant"), default=-1
        )
        for i, m in enumerate(messages):
            if isinstance(m, dict) and m.get("role") == "assistant":
                # The attempt's last message ended its model request: `model.completed` is stamped when it did.
                ended = string(event.get("ts")) if i == last else None
                r = Reply(run.session_id, f"{run.run_id or 'run'}#{n}.{i}", ended, m)
                found.setdefault(_key(r), r)
    order = list(found.values())
    return sorted(order, key=lambda r: (integer(r.message.get("timestamp")) or 0, order.index(r)))


def _key(r: Reply) -> tuple[Any, ...]:
    m = r.message
    return (r.session_id, m.get("timestamp"), m.get("responseId"), m.get("stopReason"))


def _call(sid: str, r: Reply) -> ModelCall:
    record = model_call(sid, r.ref, r.appended_at, r.message)
    usage = r.message.get("usage")
    # OpenClaw's usage keeps the reasoning tokens pi-ai's drops (usage.reasoningTokens).
    record["token_stats"]["reasoning"] = integer(usage.get("reasoningTokens")) if isinstance(usage, dict) else None
    return record


def _steps(b: RolloutBuilder, sid: str, replies: list[Reply], calls: list[ModelCall]) -> dict[str, int]:
    """A step is a reply plus the failed attempts OpenClaw retried before it. Returns the step of each reply."""
    number, step_of, pending = 0, {}, []
    for r, c in zip(replies, calls, strict=True):
        pending.append(c)
        if not r.failed:
            number += 1
            step_of[r.ref] = number
            b.step(number, sid, pending[0]["started_at"], [p["model_call_id"] for p in pending])
            pending = []
    if pending:
        b.step(number + 1, sid, pending[0]["started_at"], [p["model_call_id"] for p in pending])
    return step_of


def _requests(m: dict[str, Any]) -> list[RequestedCall]:
    blocks = m.get("content")
    return [
        cast(
            RequestedCall,
            {"tool_call_id": _call_id(m, b["id"]), "tool_name": b.get("name"), "arguments": b.get("arguments")},
        )
        for b in (blocks if isinstance(blocks, list) else [])
        if isinstance(b, dict) and b.get("type") == "toolCall" and isinstance(b.get("id"), str)
    ]


def _call_id(m: dict[str, Any], stored: str) -> str:
    # For the Responses API the stored id is `<call_id>|<item id>`; the model's id is the first part.
    return stored.split("|", 1)[0] if m.get("api") == "openai-responses" else stored


def _conversation(entries: list[Entry]) -> list[Message]:
    conv: list[Message] = []
    for e in entries:
        m, role = e.message, e.message.get("role")
        if role == "user":
            conv.append({"role": "user", "content": content_text(m.get("content"))})
        elif role == "assistant" and m.get("stopReason") not in FAILED:
            entry: Message = {"role": "assistant", "content": content_text(m.get("content"))}
            if requested := _requests(m):
                entry["tool_calls"] = requested
            conv.append(entry)
        elif role == "toolResult":
            stored = string(m.get("toolCallId")) or ""
            call_id = stored.split("|", 1)[0]
            conv.append({"role": "tool", "content": content_text(m.get("content")), "tool_call_id": call_id})
    return conv


def _tool_calls(sid: str, entries: list[Entry], step_of: dict[str, int], gaps: list[Gap]) -> list[ToolRecord]:
    results = {e.message.get("toolCallId"): e.message for e in entries if e.message.get("role") == "toolResult"}
    out: list[ToolRecord] = []
    for e in entries:
        m = e.message
        if m.get("role") != "assistant" or m.get("stopReason") in FAILED:
            continue
        blocks = m.get("content")
        for block in blocks if isinstance(blocks, list) else []:
            if not (isinstance(block, dict) and block.get("type") == "toolCall" and isinstance(block.get("id"), str)):
                continue
            result = results.get(block["id"])
            if result is None:
                continue  # requested, but no execution recorded: not a tool record
            failed = result.get("isError")
            if not isinstance(failed, bool):
                gaps.append(gap("tool_calls.status_unrecorded", "a toolResult has no isError flag"))
            details = result.get("details")
            out.append(
                {
                    "tool_call_id": _call_id(m, block["id"]),
                    "tool_name": string(block.get("name")) or "",
                    "arguments": block.get("arguments"),
                    "status": ("failed" if failed else "succeeded") if isinstance(failed, bool) else None,
                    # The exec tool keeps the command's exit code in the result's details.
                    "exit_code": integer(details.get("exitCode")) if isinstance(details, dict) else None,
                    "output": content_text(result.get("content")),
                    "invocation_id": sid,
                    "step_no": step_of.get(string(e.data.get("id")) or ""),
                }
            )
    return out


def _outcome(replies: list[Reply], result: dict[str, Any] | None) -> Outcome:
    last = replies[-1].message if replies else {}
    stop = last.get("stopReason")
    if stop in FAILED:
        error = string(last.get("errorMessage"))
        return outcome("error", failure_kind=category(status_of(error), error, stop), failure_reason=error)
    answer = content_text(last.get("content"))
    if stop is not None and stop != "toolUse" and answer:
        return outcome("completed", final_answer=answer)
    failure = result.get("error") if isinstance(result, dict) else None
    if isinstance(failure, dict):
        # The run ended in an error OpenClaw reported only in its `--json` result (no failed reply recorded).
        reason = string(failure.get("message"))
        return outcome("error", failure_kind=string(failure.get("kind")) or "error", failure_reason=reason)
    # No reply, or the last one asked for tools and nothing came after it: the run stopped midway.
    return outcome("unknown")


def _extensions(native: OpenClawNative, replies: list[Reply]) -> dict[str, Any]:
    result = native.result or {}
    meta = result.get("meta")
    meta = meta if isinstance(meta, dict) else {}
    return {
        "stop_reasons": [r.message.get("stopReason") for r in replies],
        "attempts": [
            {"run_id": run.run_id, "status": (run.last("trace.artifacts") or {}).get("finalStatus")}
            for run in native.runs
        ],
        "result": {"ok": result.get("ok"), "stop_reason": meta.get("stopReason"), "error": result.get("error")},
    }
