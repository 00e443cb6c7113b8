"""Turns the sessions, messages, parts and request log lines of OpenCode or a fork into a probe-rollout/v1 dict."""

from __future__ import annotations

import re
from typing import Any, cast

from orchestrator import records
from orchestrator.harnesses.opencode_family.calls import (
    PROTOCOL_NAMES,
    Attempt,
    attempts_of,
    iso_ms,
    obj,
    segments,
    tokens,
    wire_finish,
)
from orchestrator.harnesses.opencode_family.store import Layout, LogLine, Message, OpenCodeNative, Part, Session
from orchestrator.harnesses.values import integer, string
from orchestrator.records import (
    Compaction,
    Gap,
    ModelCall,
    Outcome,
    RequestedCall,
    Rollout,
    RolloutBuilder,
    ToolRecord,
    gap,
    outcome,
    token_stats,
)

__all__ = ["build_rollout"]


def _always_gaps(layout: Layout, protocol: str) -> list[Gap]:
    name = layout.product
    return [
        {
            "code": "model_calls.response_id_unrecorded",
            "detail": f"{name} stores no provider response id (message, part and event rows have none); every "
            "response_id is null",
            "labels": ["E1"],
        },
        {
            "code": "model_calls.failed_attempts_status_unrecorded",
            "detail": f"a request {name} retried leaves no row in {layout.db}; its log names each request it sends "
            f"(`stream`) and the error text of HTTP failures (`stream error`), never their status, and loses its "
            f"last lines when {name} exits",
            "labels": ["E1", "E7"],
        },
        {
            "code": "model_calls.status_code_inferred",
            "detail": f"a reply {name} stored whole (a step-finish part) is given 200; only a terminal API error "
            "keeps its statusCode",
        },
        {
            "code": "model_calls.finish_reason_translated",
            "detail": f"{name} stores the AI SDK's finish reason (tool-calls, stop); finish_reason is the "
            f"{PROTOCOL_NAMES[protocol]} value each is made from",
        },
    ]


_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def build_rollout(native: OpenCodeNative, layout: Layout, protocol: str = "chat") -> Rollout:
    """The rollout of one run; `protocol` is the API of the provider package the run configured (the store names
    none: a session's provider is the config's id, not its package)."""
    ids = {s.id for s in native.sessions}
    roots = [s for s in native.sessions if s.parent_id not in ids]
    root = roots[0] if roots else None
    b = RolloutBuilder(layout.harness, root.version if root else None, _always_gaps(layout, protocol))
    b.gaps += [gap(c, d) for c, d in native.problems]
    compactions: list[Compaction] = []
    for s in native.sessions:
        refs: list[str] = []
        replies = [m for m in s.messages if m.role == "assistant"]
        n = 0
        waiting: list[Compaction] = []  # compactions recorded before the step they precede
        for m in replies:
            step_calls = _calls(s, m, native.log, protocol)
            step_refs = [b.call(c) for c in step_calls]
            refs += step_refs
            if _is_summary(m):
                record: Compaction = {"invocation_id": s.id, "step_no": None, "model_call_refs": step_refs}
                if step_calls and step_calls[0]["started_at"]:
                    record["timestamp"] = step_calls[0]["started_at"]
                compactions.append(record)
                waiting.append(record)
                continue
            n += 1
            for earlier in waiting:
                earlier["step_no"] = n
            waiting.clear()
            b.step(n, s.id, step_calls[0]["started_at"], step_refs)
            for tool in _tool_calls(s, m, n, b.gaps):
                b.tool(tool)
        b.invocation(s.id, _conversation(s), parent=s.parent_id if s.parent_id in ids else None, refs=refs)
    return b.build(
        _outcome(root),
        rollout_id=root.id if root else None,
        compactions=compactions or None,
        # The log names retried requests apart from the stored steps: each is placed in the step of the next reply.
        provenance={"retry_placement": "inferred"},
        extensions={layout.harness: {"log_lines": len(native.log), "sessions": [s.id for s in native.sessions]}},
    )


def _is_summary(m: Message) -> bool:
    """A reply OpenCode asked for to compact the session: its own `summary` flag, made by its compaction agent.
    The user message before it carries a `compaction` part; neither is a step of the agent."""
    return m.data.get("summary") is True and m.data.get("mode") == "compaction"


def _calls(s: Session, m: Message, log: list[LogLine], protocol: str) -> list[ModelCall]:
    attempts = attempts_of(m, log)
    time = obj(m.data.get("time"))
    error = m.data.get("error") if isinstance(m.data.get("error"), dict) else None
    out: list[ModelCall] = []
    for k, a in enumerate(attempts):
        last = k == len(attempts) - 1
        record: dict[str, Any] = {
            "model_call_id": f"{m.id}/{k + 1}",
            "started_at": iso_ms(a.started),
            "completed_at": None,
            "protocol": protocol,
            "status_code": None,
            "response_id": None,
            "finish_reason": None,
            "error_category": None,
            "token_stats": token_stats(),
            "invocation_id": s.id,
        }
        finish = a.segment.finish if a.segment else None
        if finish is not None:
            record.update(
                completed_at=iso_ms(finish.created),
                status_code=200,
                finish_reason=wire_finish(protocol, finish.data.get("reason")),
                token_stats=tokens(finish.data.get("tokens")),
            )
        elif last and error is not None:
            status = _status(error)
            record.update(
                completed_at=iso_ms(time.get("completed") if isinstance(time.get("completed"), int) else None),
                status_code=status,
                error_category=f"http_{status}" if status else _snake(error.get("name")),
                error=error,
                # As recorded: OpenCode stores zero usage on a message whose request failed, not unknown.
                token_stats=tokens(m.data.get("tokens")),
            )
        else:
            texts = [ln.error for ln in a.errors if ln.error]
            record.update(
                completed_at=iso_ms(a.errors[-1].at) if a.errors else None,
                error_category=_retried_category(texts, a, last),
                error="; ".join(texts) or None,
            )
        out.append(cast(ModelCall, record))  # updated in place, so its keys keep their order
    return out


def _retried_category(texts: list[str], a: Attempt, last: bool) -> str:
    if last:
        return "unfinished"  # neither a reply nor an error stored: OpenCode was stopped during this request
    text = " ".join(texts).lower()
    if "timed out" in text or "timeout" in text:
        return "timeout"
    if texts:
        return "api_error"  # OpenCode logs the error's text, never its HTTP status
    # Sent, then retried without a logged error: a reply that began and broke off, or one that never came.
    return "stream_incomplete" if a.segment is not None else "no_reply"


def _status(error: dict[str, Any]) -> int | None:
    data = obj(error.get("data"))
    return integer(data.get("statusCode"))


def _snake(name: Any) -> str:
    return _CAMEL.sub("_", name).lower() if isinstance(name, str) and name else "error"


def _acted_parts(m: Message) -> list[Part]:
    """The parts of replies the harness received whole; of a reply whose end it never recorded, only the tool calls
    it records as completed with an exit code: those ran, and their results went back to the model (Kilo retries a
    reset stream in the same message and writes no step-finish for the retry). The rest of a stream cut midway was
    never acted on, and a call aborted with it (completed, "User aborted the command", no exit code) never ran."""
    return [p for seg in segments(m) for p in seg.parts if seg.finish is not None or _ran(p)]


def _ran(p: Part) -> bool:
    state = obj(p.data.get("state"))
    return (
        p.type == "tool"
        and state.get("status") == "completed"
        and integer(obj(state.get("metadata")).get("exit")) is not None
    )


def _tool_calls(s: Session, m: Message, step: int, gaps: list[Gap]) -> list[ToolRecord]:
    out: list[ToolRecord] = []
    for p in _acted_parts(m):
        if p.type != "tool" or not isinstance(p.data.get("callID"), str):
            continue
        state = obj(p.data.get("state"))
        status, exit_code, output = _result(state)
        if status is None:
            gaps.append(gap("tool_calls.status_unrecorded", f"tool part {p.id}: state {state.get('status')!r}"))
        out.append(
            {
                "tool_call_id": p.data["callID"],
                "tool_name": string(p.data.get("tool")) or "",
                "arguments": state.get("input"),
                "status": status,
                "exit_code": exit_code,
                "output": output,
                "invocation_id": s.id,
                "step_no": step,
            }
        )
    return out


def _result(state: dict[str, Any]) -> tuple[str | None, int | None, str | None]:
    """(status, exit code, output as returned to the model) of a tool part's final state."""
    meta = obj(state.get("metadata"))
    exit_code = integer(meta.get("exit"))
    if state.get("status") == "completed":
        # OpenCode marks a command that ran as completed whatever its exit code; the code itself is kept.
        status = "succeeded" if exit_code in (0, None) else "failed"
        return status, exit_code, string(state.get("output"))
    if state.get("status") == "error":
        return "failed", exit_code, string(state.get("error"))
    return None, exit_code, None


def _conversation(s: Session) -> list[records.Message]:
    conv: list[records.Message] = []
    for m in s.messages:
        if m.role == "user":
            texts = [p.data.get("text") for p in m.parts if p.type == "text" and isinstance(p.data.get("text"), str)]
            conv.append({"role": "user", "content": "".join(t for t in texts if t is not None) or None})
            continue
        if m.role != "assistant":
            continue
        parts = _acted_parts(m)
        text = "".join(p.data["text"] for p in parts if p.type == "text" and isinstance(p.data.get("text"), str))
        tools = [p for p in parts if p.type == "tool" and isinstance(p.data.get("callID"), str)]
        if not text and not tools:
            continue  # an attempt that failed before any reply: the model saw nothing of it
        entry: records.Message = {"role": "assistant", "content": text or None}
        if tools:
            # The tool's name as stored, a missing one included (the schema checks then report it).
            entry["tool_calls"] = [
                cast(
                    RequestedCall,
                    {
                        "tool_call_id": p.data["callID"],
                        "tool_name": p.data.get("tool"),
                        "arguments": _state(p).get("input"),
                    },
                )
                for p in tools
            ]
        conv.append(entry)
        for p in tools:
            conv.append({"role": "tool", "content": _result(_state(p))[2], "tool_call_id": p.data["callID"]})
    return conv


def _state(p: Part) -> dict[str, Any]:
    return obj(p.data.get("state"))


def _outcome(root: Session | None) -> Outcome:
    replies = [m for m in root.messages if m.role == "assistant"] if root else []
    last = replies[-1] if replies else None
    if last is None:
        return outcome("unknown")
    error = last.data.get("error")
    if isinstance(error, dict):
        data = obj(error.get("data"))
        status = _status(error)
        kind = f"http_{status}" if status else _snake(error.get("name"))
        return outcome("error", failure_kind=kind, failure_reason=string(data.get("message")))
    parts = _acted_parts(last)
    text = "".join(p.data["text"] for p in parts if p.type == "text" and isinstance(p.data.get("text"), str))
    if last.data.get("finish") not in (None, "tool-calls") and text:
        return outcome("completed", final_answer=text)
    return outcome("unknown")
