"""Turns Qwen Code's chat recording (and its stream-json `result`) into a probe-rollout/v1 dict, using only what
Qwen recorded.

The recording is one JSONL file per session, appended in order: the user's prompt, a `ui_telemetry` record for
every API reply or error Qwen's logging layer saw (response id, HTTP status, duration, token counts), the
`assistant` record of each reply it used, a `ui_telemetry` record and a `tool_result` record for each tool it ran,
and `chat_compression` records when it compressed its history.
"""

from __future__ import annotations

from typing import Any

from orchestrator.harnesses.base import tool_arguments
from orchestrator.harnesses.qwen_code.calls import API_ERROR, API_RESPONSE, model_call, usage_stats
from orchestrator.harnesses.qwen_code.recording import QwenNative
from orchestrator.harnesses.values import count, integer, nonempty, string
from orchestrator.records import (
    Compaction,
    Gap,
    Message,
    Outcome,
    RequestedCall,
    Rollout,
    RolloutBuilder,
    TokenStats,
    exit_status,
    gap,
    outcome,
    token_stats,
    tool_record,
    unique_gaps,
)

__all__ = ["build_rollout"]

_ALWAYS_GAPS: list[Gap] = [
    {
        "code": "model_calls.finish_reason_unrecorded",
        "detail": "Qwen's api_response event and its assistant record keep no finish reason (its stream-json "
        "stop_reason is its own tool_use or null, never the wire's value)",
        "labels": ["E1"],
    },
]
_SDK_RETRIES_GAP: Gap = {
    "code": "model_calls.failed_attempts_unrecorded",
    "detail": "the provider SDK under Qwen's Chat and Anthropic generators retries 408/409/429/5xx and connection "
    "errors itself (model.generationConfig.maxRetries is not 0): attempts it retried never reach Qwen's logging "
    "layer and are in no record",
    "labels": ["E1", "E7"],
}


def build_rollout(native: QwenNative, harness: str) -> Rollout:
    session = native.session_id or "qwen-session"
    walk = _Walk(RolloutBuilder(harness, native.version), session)
    walk.b.gaps += [gap(code, detail) for code, detail in native.problems]
    for record in native.records:
        walk.record(record)
    walk.finish()
    b = walk.b
    # Qwen's Responses generator streams through a fetch of its own; the SDK client that retries out of sight
    # serves its Chat and Anthropic generators.
    if native.sdk_retries != 0 and any(c["protocol"] != "responses" for c in b.calls):
        b.gaps.append(_SDK_RETRIES_GAP)
    b.gaps = unique_gaps([*_ALWAYS_GAPS, *b.gaps])
    b.invocation(session, walk.conversation, token_totals=_totals(native.result))
    return b.build(
        _outcome(native, walk),
        rollout_id=native.session_id,
        compactions=walk.compactions or None,
        # Qwen logs a failed attempt apart from the reply it retried for: it is placed in that reply's step.
        provenance={"retry_placement": "inferred"} if walk.placed_failures else None,
        extensions={"qwen_code": {"recording": native.path, "failed_response_ids": walk.failed_response_ids}},
    )


class _Walk:
    """One pass over the recording in order: calls, steps, tool records, compactions and the conversation."""

    def __init__(self, b: RolloutBuilder, session: str) -> None:
        self.b, self.session = b, session
        self.conversation: list[Message] = []
        self.compactions: list[Compaction] = []
        self.failed: list[str] = []  # failed attempts since the last step
        self.reply: str | None = None  # the last reply Qwen logged, awaiting the assistant record that used it
        self.step_of: dict[str, int] = {}  # response id -> the step of the reply carrying it
        self.placed_failures = False
        self.failed_response_ids: list[str] = []
        self.last_text: str | None = None  # text of the last assistant record
        self.last_requested = False  # whether the last assistant record asked for tools

    def record(self, r: dict[str, Any]) -> None:
        kind, subtype = r.get("type"), r.get("subtype")
        raw = r.get("message")
        message: dict[str, Any] = raw if isinstance(raw, dict) else {}
        if kind == "user" and subtype is None:
            self.conversation.append({"role": "user", "content": _text(message)})
        elif kind == "assistant":
            self._assistant(message, r.get("usageMetadata"))
        elif kind == "tool_result":
            self._tool_result(message, r.get("toolCallResult"))
        elif kind == "system" and subtype == "ui_telemetry":
            payload = r.get("systemPayload")
            event = payload.get("uiEvent") if isinstance(payload, dict) else None
            if isinstance(event, dict):
                self._event(event)
        elif kind == "system" and subtype == "chat_compression":
            self._compression(r)

    def _event(self, event: dict[str, Any]) -> None:
        name = event.get("event.name")
        if name not in (API_RESPONSE, API_ERROR):
            return
        if self.reply is not None:
            # A reply no assistant record used (a side request: a summary, a title) is a call in no step.
            self.reply = None
        call = model_call(self.b.next_call_id(), self.session, event)
        self.b.call(call)
        if name == API_RESPONSE:
            self.reply = call["model_call_id"]
        else:
            self.failed.append(call["model_call_id"])
            rid = nonempty(event.get("response_id"))
            if rid:
                self.failed_response_ids.append(rid)

    def _assistant(self, message: dict[str, Any], usage: Any) -> None:
        refs = [*self.failed, *([self.reply] if self.reply else [])]
        self.placed_failures |= bool(self.failed and self.reply)
        self.failed, number = [], len(self.b.steps) + 1
        first = next((c for c in self.b.calls if c["model_call_id"] in refs), None)
        step = self.b.step(number, self.session, first["started_at"] if first else None, refs)
        # The usage Qwen recorded with the turn, beside the one it logged for the call (none: unknown).
        step["token_stats"] = usage_stats(usage)
        if not self.reply:
            self.b.gap("steps.reply_unlogged", f"step {number}: an assistant record follows no logged API reply")
        self.reply = None
        requested = _requested(message)
        text = _text(message)
        entry: Message = {"role": "assistant", "content": text}
        if requested:
            entry["tool_calls"] = requested
        self.conversation.append(entry)
        self.last_text, self.last_requested = text, bool(requested)
        for tc in requested:
            self.b.tool(tool_record(tc, self.session, number), awaits_result=True)

    def _tool_result(self, message: dict[str, Any], result: Any) -> None:
        info = result if isinstance(result, dict) else {}
        for part in _parts(message):
            response = part.get("functionResponse")
            if not isinstance(response, dict):
                continue
            cid = nonempty(response.get("id")) or nonempty(info.get("callId"))
            output = _response_text(response.get("response"))
            self.conversation.append({"role": "tool", "content": output, "tool_call_id": cid})
            record = self.b.result(cid)
            if record is None:
                continue
            record["output"] = output
            display = info.get("resultDisplay") if nonempty(info.get("callId")) == cid else None
            code = integer(display.get("exitCode")) if isinstance(display, dict) else None
            if code is not None:
                record["exit_code"], record["status"] = code, exit_status(code)
            elif info.get("status") in ("success", "error") and nonempty(info.get("callId")) == cid:
                # A tool that ran no command (or was refused) says only whether it succeeded.
                record["status"] = "succeeded" if info["status"] == "success" else "failed"

    def _compression(self, r: dict[str, Any]) -> None:
        # The summarization reply Qwen logged just before the compression record is the compaction's call.
        refs = [self.reply] if self.reply else []
        self.reply = None
        self.compactions.append(
            {
                "invocation_id": self.session,
                "step_no": len(self.b.steps) + 1,
                "model_call_refs": refs,
                "timestamp": string(r.get("timestamp")),
            }
        )

    def finish(self) -> None:
        if self.failed:
            # Attempts after the last reply Qwen used: the step that never got its reply.
            first = next(c for c in self.b.calls if c["model_call_id"] == self.failed[0])
            self.b.step(len(self.b.steps) + 1, self.session, first["started_at"], self.failed)
        self.b.unrecorded_results()


def _parts(message: dict[str, Any]) -> list[dict[str, Any]]:
    parts = message.get("parts")
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def _text(message: dict[str, Any]) -> str | None:
    """The message's text parts joined; thoughts (`thought: true`) left out; none when it has no text."""
    texts = [p["text"] for p in _parts(message) if isinstance(p.get("text"), str) and not p.get("thought")]
    return "".join(texts) if texts else None


def _requested(message: dict[str, Any]) -> list[RequestedCall]:
    calls = [p["functionCall"] for p in _parts(message) if isinstance(p.get("functionCall"), dict)]
    return [
        {
            "tool_call_id": nonempty(c.get("id")) or "",
            "tool_name": nonempty(c.get("name")) or "",
            "arguments": tool_arguments(c.get("args")),
        }
        for c in calls
    ]


def _response_text(response: Any) -> str | None:
    """What Qwen fed back to the model as the tool's result: its `output`, or its `error` when the tool failed."""
    if not isinstance(response, dict):
        return None
    for key in ("output", "error"):
        if isinstance(response.get(key), str):
            return str(response[key])
    return None


def _outcome(native: QwenNative, walk: _Walk) -> Outcome:
    result = native.result
    if result is not None and result.get("is_error") is True:
        error = result.get("error")
        reason = nonempty(error.get("message")) if isinstance(error, dict) else None
        kind = nonempty(result.get("subtype")) or "error"
        return outcome("error", failure_kind=kind, failure_reason=reason or kind)
    if result is not None and result.get("is_error") is False and isinstance(result.get("result"), str):
        return outcome("completed", final_answer=result["result"])
    if walk.last_text and not walk.last_requested:
        # No result event (the run was killed): the last reply Qwen recorded, if it asked for nothing more.
        return outcome("completed", final_answer=walk.last_text)
    return outcome("unknown")


def _totals(result: dict[str, Any] | None) -> TokenStats | None:
    """The session's usage as Qwen's `result` event sums it (Anthropic's names, Qwen's sums); none without one."""
    usage = result.get("usage") if result is not None else None
    if not isinstance(usage, dict):
        return None
    return token_stats(
        prompt=count(usage.get("input_tokens")),
        completion=count(usage.get("output_tokens")),
        total=count(usage.get("total_tokens")),
        cached=count(usage.get("cache_read_input_tokens")),
    )
