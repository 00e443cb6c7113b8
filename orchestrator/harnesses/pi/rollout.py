"""Turns Pi's session entries into a probe-rollout/v1 dict, using only what Pi recorded."""

from __future__ import annotations

import re
from typing import Any, cast

from orchestrator.harnesses.pi.calls import FAILED, category, content_text, model_call, status_of
from orchestrator.harnesses.pi.session import Entry, PiNative, Session
from orchestrator.harnesses.values import string
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

_EXIT = re.compile(r"Command exited with code (-?\d+)\s*$")  # Pi's bash tool appends this to a failed command
_ALWAYS_GAPS: list[Gap] = [
    {
        "code": "model_calls.status_code_inferred",
        "detail": "Pi stores no HTTP status: a reply it stored whole is given 200, a failed attempt the status "
        "its errorMessage starts with (the provider SDK's error text), else none",
    },
    {
        "code": "model_calls.finish_reason_translated",
        "detail": "Pi stores its own stopReason (stop, toolUse, length); finish_reason is the wire value each maps "
        "from for the message's api, and the raw stopReason is kept in extensions",
    },
    {
        "code": "model_calls.reasoning_tokens_unrecorded",
        "detail": "Pi's usage has input, output, cacheRead, cacheWrite and totalTokens; reasoning tokens are "
        "folded into output and not kept, so token_stats.reasoning is null",
        "labels": ["E2"],
    },
]
_SDK_RETRIES_GAP: Gap = {
    "code": "model_calls.failed_attempts_unrecorded",
    "detail": "the provider SDK under Pi retries 408/409/429/5xx and connection errors itself (retry.provider."
    "maxRetries is not 0 in settings.json); attempts it retried never reach Pi and are in no session file",
    "labels": ["E1", "E7"],
}


def build_rollout(native: PiNative) -> Rollout:
    b = RolloutBuilder("pi", None, _ALWAYS_GAPS)  # the session header carries its format version, not Pi's
    if native.provider_max_retries != 0:
        b.gaps.append(_SDK_RETRIES_GAP)
    b.gaps += [gap(code, detail) for code, detail in native.problems]
    for s in native.sessions:
        replies = _assistant(s)
        calls = [model_call(s.id, e.id, e.timestamp, e.message) for e in replies]
        refs = [b.call(c) for c in calls]
        b.invocation(s.id, _conversation(s), parent=_parent(s, native.sessions), refs=refs)
        step_of = _steps(b, s, replies, calls)
        for record in _tool_calls(s, step_of, b.gaps):
            b.tool(record)
    root = next((s for s in native.sessions if _parent(s, native.sessions) is None), native.sessions[0])
    b.gaps = unique_gaps(b.gaps)
    return b.build(
        _outcome(root),
        rollout_id=root.id,
        # Pi stores a failed attempt as an error entry: it is placed in the step of the next reply.
        provenance={"retry_placement": "inferred"},
        extensions={"pi": _extensions(native)},
    )


def _assistant(s: Session) -> list[Entry]:
    return [e for e in s.entries if e.type == "message" and e.role == "assistant"]


def _parent(s: Session, sessions: list[Session]) -> str | None:
    # A forked session names the file it came from; a parent we did not collect stays unnamed.
    found = [o.id for o in sessions if s.parent_session and o is not s and s.parent_session.endswith(o.path)]
    return found[0] if found else None


def _steps(b: RolloutBuilder, s: Session, replies: list[Entry], calls: list[ModelCall]) -> dict[str, int]:
    """A step is the reply that ended it plus the failed attempts Pi retried before it; steps are numbered per
    session. Returns the step of each reply's entry id."""
    number = 0
    step_of: dict[str, int] = {}
    pending: list[ModelCall] = []
    for e, c in zip(replies, calls, strict=True):
        pending.append(c)
        if c["error_category"] is None:
            number += 1
            step_of[e.id] = number
            _step(b, s, number, pending)
            pending = []
    if pending:
        _step(b, s, number + 1, pending)
    return step_of


def _step(b: RolloutBuilder, s: Session, number: int, calls: list[ModelCall]) -> None:
    # Pi records no step start: its first attempt's start.
    b.step(number, s.id, calls[0]["started_at"], [c["model_call_id"] for c in calls])


def _conversation(s: Session) -> list[Message]:
    conv: list[Message] = []
    ids: dict[str, str] = {}  # Pi's stored tool call id -> the model's
    for e in s.entries:
        m = e.message if e.type == "message" else {}
        role = m.get("role")
        if role == "user":
            conv.append({"role": "user", "content": content_text(m.get("content"))})
        elif role == "assistant" and m.get("stopReason") not in FAILED:
            # A failed reply is dropped from Pi's live context before it retries: the model never sees it.
            entry: Message = {"role": "assistant", "content": content_text(m.get("content"))}
            requested = _tool_requests(m)
            if requested:
                entry["tool_calls"] = [
                    cast(RequestedCall, {k: v for k, v in t.items() if k != "stored_id"}) for t in requested
                ]
                ids.update((t["stored_id"], t["tool_call_id"]) for t in requested)
            conv.append(entry)
        elif role == "toolResult":
            stored = string(m.get("toolCallId"))
            call_id = ids.get(stored or "", stored)
            conv.append({"role": "tool", "content": content_text(m.get("content")), "tool_call_id": call_id})
    return conv


def _tool_requests(m: dict[str, Any]) -> list[dict[str, Any]]:
    blocks = m.get("content")
    if not isinstance(blocks, list):
        return []
    return [
        {
            "tool_call_id": _call_id(m, b["id"]),
            "tool_name": b.get("name"),
            "arguments": b.get("arguments"),
            "stored_id": b["id"],
        }
        for b in blocks
        if isinstance(b, dict) and b.get("type") == "toolCall" and isinstance(b.get("id"), str)
    ]


def _call_id(m: dict[str, Any], stored: str) -> str:
    # For the Responses API pi-ai stores a tool call's id as `<call_id>|<item id>`; the model's id is the first.
    return stored.split("|", 1)[0] if m.get("api") == "openai-responses" else stored


def _tool_calls(s: Session, step_of: dict[str, int], gaps: list[Gap]) -> list[ToolRecord]:
    results = {e.message.get("toolCallId"): e.message for e in s.entries if e.role == "toolResult"}
    out: list[ToolRecord] = []
    for e in _assistant(s):
        if e.message.get("stopReason") in FAILED:
            continue  # a failed attempt's partial tool calls were never run
        for t in _tool_requests(e.message):
            result = results.get(t["stored_id"])
            if result is None:
                continue  # requested, but no execution recorded: not a tool record
            output = content_text(result.get("content"))
            failed = result.get("isError")
            if not isinstance(failed, bool):
                gaps.append(gap("tool_calls.status_unrecorded", "a toolResult has no isError flag"))
            found = _EXIT.search(output or "") if failed is True else None
            out.append(
                {
                    "tool_call_id": t["tool_call_id"],
                    "tool_name": string(t["tool_name"]) or "",
                    "arguments": t["arguments"],
                    "status": ("failed" if failed else "succeeded") if isinstance(failed, bool) else None,
                    # Pi keeps a non-zero exit code only as the last line of a failed result's text.
                    "exit_code": int(found.group(1)) if found else None,
                    "output": output,
                    "invocation_id": s.id,
                    "step_no": step_of.get(e.id),
                }
            )
    return out


def _outcome(s: Session) -> Outcome:
    replies = _assistant(s)
    last = replies[-1].message if replies else {}
    stop = last.get("stopReason")
    if stop in FAILED:
        error = string(last.get("errorMessage"))
        return outcome("error", failure_kind=category(status_of(error), error, stop), failure_reason=error)
    answer = content_text(last.get("content"))
    if stop is not None and stop != "toolUse" and answer:
        return outcome("completed", final_answer=answer)
    # No reply, or the last one asked for tools and nothing came after it: the run stopped midway.
    return outcome("unknown")


def _extensions(native: PiNative) -> dict[str, Any]:
    return {
        "provider_max_retries": native.provider_max_retries,
        "sessions": [
            {
                "id": s.id,
                "path": s.path,
                "cwd": s.cwd,
                "stop_reasons": [e.message.get("stopReason") for e in _assistant(s)],
                # Failed attempts that still carried a response id (a stream cut after its first event).
                "failed_response_ids": [
                    e.message["responseId"]
                    for e in _assistant(s)
                    if e.message.get("stopReason") in FAILED and string(e.message.get("responseId"))
                ],
            }
            for s in native.sessions
        ],
    }
