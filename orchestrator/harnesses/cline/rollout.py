"""Turns Cline's own records into a probe-rollout/v1 dict: calls, steps, tools and the outcome from its event stream,
each session's history from its messages file. Nothing is taken from anywhere else."""

from __future__ import annotations

import json
import re
from typing import Any

from orchestrator.harnesses.cline.native import ClineNative, Session
from orchestrator.harnesses.cline.timeline import Iteration, Timeline, ToolRun, read_timeline
from orchestrator.harnesses.values import count, nonempty, string
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
    token_stats,
    unique_gaps,
)

__all__ = ["PROTOCOLS", "build_rollout", "tool_output"]

# Cline's provider of a session -> the protocol it speaks (openai-native is the AI SDK's Responses model).
PROTOCOLS = {"openai-compatible": "chat", "openai-native": "responses", "anthropic": "messages"}
_EXIT = re.compile(r"^Command exited with code (-?\d+)$")  # run_commands' error text for a non-zero exit
_ALWAYS_GAPS: list[Gap] = [
    gap(
        "model_calls.response_id_unrecorded",
        "Cline keeps no response id (neither the stream nor the messages file): calls are joined to the wire in order",
        ["E1"],
    ),
    gap(
        "model_calls.status_code_implied",
        "Cline records no HTTP status: a call whose reply it recorded (usage, text or a tool call) is given 200, "
        "a failed one none",
    ),
    gap("model_calls.finish_reason_unrecorded", "Cline records no finish or stop reason of a reply"),
    gap(
        "model_calls.failed_attempts_unrecorded",
        "the AI SDK under Cline retries failed requests (429, 5xx, connection errors) itself; attempts it retried "
        "reach neither the event stream nor the session files, only a failure that ends the run does",
        ["E1", "E7"],
    ),
    gap(
        "model_calls.reasoning_tokens_unrecorded",
        "Cline's usage has input, output, cache read and cache write tokens: reasoning and total stay null",
        ["E2"],
    ),
]


def build_rollout(native: ClineNative) -> Rollout:
    t = read_timeline(native.events)
    root = native.root
    session = root.id if root else t.task_id or "cline"
    b = RolloutBuilder("cline", _version(root), _ALWAYS_GAPS)
    b.gaps += [gap(code, detail) for code, detail in native.problems]
    protocol = _protocol(root, t)
    for it in t.iterations:
        call = _call(b, it, session, protocol)
        if call is None:
            b.gap("model_calls.reply_unrecorded", f"iteration {it.number} started and recorded no reply or error")
            continue
        b.step(it.number, session, it.started_at, [b.call(call)])
        for run in it.tools:
            b.tool(_tool(run, session, it.number), awaits_result=not run.ended)
    b.unrecorded_results()
    for s in native.sessions:
        refs = [c["model_call_id"] for c in b.calls] if s is root else []
        b.invocation(s.id, _conversation(s), parent=s.parent, refs=refs)
    if len(native.sessions) > 1:
        # The stream's agent events name no agent: a sub-agent's requests cannot be told from the lead's.
        b.gap(
            "model_calls.owner_unrecorded",
            f"{len(native.sessions)} sessions stored; every call of the event stream is given to the lead session",
            ["E8"],
        )
    if root is None:
        b.gap("invocations.history_unrecorded", "Cline stored no session: the history the model saw is not recorded")
        b.invocation(session, [], refs=[c["model_call_id"] for c in b.calls])
    b.gaps = unique_gaps(b.gaps)
    return b.build(_outcome(t), rollout_id=session, extensions={"cline": _extensions(t, root)})


def _version(root: Session | None) -> str | None:
    """The Cline version the session says made it (metadata.sessionHistoryOrigin.version)."""
    meta = root.manifest.get("metadata") if root else None
    origin = meta.get("sessionHistoryOrigin") if isinstance(meta, dict) else None
    return nonempty(origin.get("version")) if isinstance(origin, dict) else None


def _protocol(root: Session | None, t: Timeline) -> str:
    model = (t.result or {}).get("model")
    provider = string(root.manifest.get("provider")) if root else None
    provider = provider or (string(model.get("provider")) if isinstance(model, dict) else None) or ""
    # A provider we do not know stays as Cline named it, for the schema checks to report.
    return PROTOCOLS.get(provider, provider)


def _call(b: RolloutBuilder, it: Iteration, session: str, protocol: str) -> ModelCall | None:
    """The iteration's model call: its reply as Cline recorded it, or the failure that ended the run in it."""
    if it.replied:
        u = it.usage or {}
        stats = token_stats(
            prompt=count(u.get("inputTokens")),
            completion=count(u.get("outputTokens")),
            cached=count(u.get("cacheReadTokens")),
        )
        return {
            "model_call_id": b.next_call_id(),
            "started_at": it.started_at,
            "completed_at": it.usage_at or it.reply_at,
            "protocol": protocol,
            "status_code": 200,
            "response_id": None,
            "finish_reason": None,
            "error_category": None,
            "token_stats": stats,
            "invocation_id": session,
        }
    if it.error is None:
        return None
    error = it.error.get("error")
    return {
        "model_call_id": b.next_call_id(),
        "started_at": it.started_at,
        "completed_at": it.error_at,
        "protocol": protocol,
        "status_code": None,
        "response_id": None,
        "finish_reason": None,
        # Cline's own class of the failure (`unknown`, `context_window_exceeded`): a category of its naming.
        "error_category": string(it.error.get("errorClass")) or "error",
        "error": error.get("message") if isinstance(error, dict) else error,
        "token_stats": token_stats(),
        "invocation_id": session,
    }


def _tool(run: ToolRun, session: str, step: int) -> ToolRecord:
    items = [i for i in run.output if isinstance(i, dict)] if isinstance(run.output, list) else []
    ok = [i.get("success") for i in items]
    status = None if not items or not all(isinstance(v, bool) for v in ok) else "succeeded" if all(ok) else "failed"
    # A non-zero exit is recorded only as the error text of a single command's result; success records no code.
    found = _EXIT.match(string(items[0].get("error")) or "") if len(items) == 1 and status == "failed" else None
    return {
        "tool_call_id": run.call_id,
        "tool_name": run.name or "",
        "arguments": run.arguments,
        "status": status if run.ended else None,
        "exit_code": int(found.group(1)) if found else None,
        "output": tool_output(run.output) if run.ended else None,
        "invocation_id": session,
        "step_no": step,
    }


def tool_output(value: Any) -> str | None:
    """A tool result as the model was sent it: a string as is; Cline's structured result (run_commands' list) as
    the compact JSON text its provider layer sends (JSON.stringify)."""
    if isinstance(value, str):
        return value
    if value is None:
        return None
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _conversation(s: Session) -> list[Message]:
    conv: list[Message] = [{"role": "system", "content": s.system_prompt}] if s.system_prompt is not None else []
    for m in s.messages:
        content = m.get("content")
        raw = content if isinstance(content, list) else [{"type": "text", "text": content}]
        blocks: list[dict[str, Any]] = [b for b in raw if isinstance(b, dict)]
        results = [b for b in blocks if b.get("type") == "tool_result"]
        texts = [t for b in blocks if b.get("type") == "text" and (t := string(b.get("text"))) is not None]
        text = "".join(texts) if texts else None
        if m.get("role") == "assistant":
            entry: Message = {"role": "assistant", "content": text}
            calls: list[RequestedCall] = [
                {
                    "tool_call_id": str(b.get("id")),
                    "tool_name": string(b.get("name")) or "",
                    "arguments": b.get("input"),
                }
                for b in blocks
                if b.get("type") == "tool_use"
            ]
            if calls:
                entry["tool_calls"] = calls
            conv.append(entry)
        elif m.get("role") == "user":
            if text is not None:
                conv.append({"role": "user", "content": text})
            conv += [
                {"role": "tool", "content": tool_output(r.get("content")), "tool_call_id": string(r.get("tool_use_id"))}
                for r in results
            ]
    return conv


def _outcome(t: Timeline) -> Outcome:
    r = t.result
    if r is None:
        # No closing line: the run was killed or crashed before it could say how it ended.
        return outcome("unknown")
    reason = string(r.get("finishReason"))
    text = string(r.get("text"))
    if reason == "completed":
        return outcome("completed", final_answer=text)
    failed = next((it.error for it in reversed(t.iterations) if it.error is not None), None) or t.failure
    kind = string(failed.get("errorClass")) if failed else None
    return outcome("error", failure_kind=kind or reason, failure_reason=text)


def _extensions(t: Timeline, root: Session | None) -> dict[str, Any]:
    r = t.result or {}
    return {
        "session_status": string(root.manifest.get("status")) if root else None,
        "session_exit_code": root.manifest.get("exit_code") if root else None,
        "finish_reason": string(r.get("finishReason")),
        "task_id": t.task_id,
        "mistakes": t.mistakes,
        "aggregate_usage": r.get("aggregateUsage"),
    }
