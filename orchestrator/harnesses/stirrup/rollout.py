"""Stirrup's run record (what `session.run` returned, saved by our driver) to a probe-rollout/v1 dict.

The record holds `returned: {finish_params, history, metadata}` exactly as Stirrup returned them (pydantic's JSON
form), or `raised: {type, message}` when `session.run` raised instead. Everything here comes from those values:
the history's assistant messages are the model calls Stirrup kept, its tool messages the results it fed back.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from orchestrator.harnesses.base import NormalizeError, tool_arguments
from orchestrator.harnesses.jsonl import loads_line
from orchestrator.harnesses.values import count, nonempty
from orchestrator.records import (
    Gap,
    Message,
    Outcome,
    RequestedCall,
    Rollout,
    RolloutBuilder,
    exit_status,
    outcome,
    token_stats,
    tool_record,
)

__all__ = ["FINISH_TOOL", "RECORD_FORMAT", "RECORD_NAME", "normalize_record"]

RECORD_NAME = "run.json"
RECORD_FORMAT = "probe-stirrup-run/v1"
# Stirrup's default finish tool (stirrup.constants.DEFAULT_FINISH_TOOL_NAME): its call ends the run and is the
# outcome, not an executed tool.
FINISH_TOOL = "finish"
# One session, one agent: Stirrup gives the run no id, so the invocation is named by us.
INVOCATION_ID = "stirrup-session"
# `code_exec` results are `<shell_results>` XML (stirrup.tools.code_backends.base.format_result).
_EXIT_CODE = re.compile(r"<exit_code>(-?\d+)</exit_code>")

# What Stirrup's returned values have no place for, true of every run, named so no check mistakes absence for zero.
_STRUCTURAL_GAPS: tuple[Gap, ...] = (
    {
        "code": "model_calls.failed_attempts_unrecorded",
        "detail": "the history holds only replies Stirrup accepted: attempts the openai SDK retried (429, 5xx, "
        "timeouts) leave no trace, so failed attempts and their error payloads are absent",
        "labels": ["E1", "E7"],
    },
    {
        "code": "model_calls.wall_clock_unrecorded",
        "detail": "an assistant message carries request_start_time/request_end_time from time.perf_counter(), a "
        "monotonic clock with no epoch: when a call started or ended cannot be told, nor when a step was taken",
        "labels": ["E1", "E3"],
    },
    {
        "code": "model_calls.response_id_unrecorded",
        "detail": "ChatCompletionsClient does not keep the provider's response id (provider_response_id stays null)",
    },
    {
        "code": "model_calls.finish_reason_unrecorded",
        "detail": "ChatCompletionsClient reads the reply's finish_reason only to detect a length stop and does not "
        "keep it",
        "labels": ["E1"],
    },
    {
        "code": "model_calls.status_code_implied",
        "detail": "the history records accepted replies, not HTTP statuses; a recorded reply is reported as status 200",
    },
    {
        "code": "tokens.cached_unrecorded",
        "detail": "TokenUsage keeps input, answer and reasoning counts only: cached prompt tokens are not recorded",
        "labels": ["E2"],
    },
    {
        "code": "tool_calls.exit_code_in_text",
        "detail": "a code_exec result records the exit code only inside its <shell_results> text (ToolMessage.success "
        "says whether the tool ran, not how the command ended); it is read from there",
    },
)


def normalize_record(path: Path, harness: str) -> Rollout:
    """Read the run record at `path`; NormalizeError when it is absent, corrupt or not a run record."""
    if not path.is_file():
        raise NormalizeError(f"the driver wrote no run record ({path.name} missing in native/)")
    try:
        data = loads_line(path.read_bytes())
    except (ValueError, RecursionError) as exc:
        raise NormalizeError(f"{path.name} is not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != RECORD_FORMAT:
        raise NormalizeError(f"{path.name} is not a Stirrup run record (format {RECORD_FORMAT!r})")
    returned, raised = data.get("returned"), data.get("raised")
    if isinstance(returned, dict) and isinstance(returned.get("history"), list):
        history = _History(harness, data.get("stirrup_version"))
        for group in returned["history"]:
            for message in group if isinstance(group, list) else []:
                if isinstance(message, dict):
                    history.message(message)
        return history.build(_finished(returned.get("finish_params")))
    if isinstance(raised, dict):
        history = _History(harness, data.get("stirrup_version"))
        history.b.gap(
            "history.not_returned",
            "session.run raised instead of returning, so Stirrup handed back no history: every reply, "
            "step and tool call of the run is unrecorded",
            ["E1", "E3", "E4", "E5"],
        )
        kind = nonempty(raised.get("type")) or "exception"
        history.failed_call(raised)
        return history.build(
            outcome("error", failure_kind=kind, failure_reason=nonempty(raised.get("message")) or kind)
        )
    raise NormalizeError(f"{path.name} records neither returned values nor a raised exception")


def _finished(finish_params: Any) -> Outcome:
    if isinstance(finish_params, dict):
        reason = finish_params.get("reason")
        return outcome("completed", final_answer=reason if isinstance(reason, str) else None)
    # Stirrup returns finish_params None when max_turns ran out without a finish call.
    return outcome(
        "error",
        failure_kind="max_turns",
        failure_reason="session.run returned without finish params (maximum number of turns reached)",
    )


def _text(content: Any) -> str | None:
    """Stirrup's own content form (base.content_text's reading, and plain strings as parts too)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content blocks: text parts only (images are not model-visible text)
        parts = [p if isinstance(p, str) else p.get("text") for p in content if isinstance(p, str | dict)]
        return "".join(p for p in parts if isinstance(p, str))
    return None


class _History:
    """One pass over the history in order: calls, steps, tool records and the conversation."""

    def __init__(self, harness: str, version: Any) -> None:
        self.b = RolloutBuilder(harness, nonempty(version), _STRUCTURAL_GAPS)
        self.conversation: list[Message] = []

    def message(self, m: dict[str, Any]) -> None:
        role = m.get("role")
        if role == "assistant":
            self._assistant(m)
        elif role == "tool":
            self._tool(m)
        elif role in ("system", "user"):
            self.conversation.append({"role": role, "content": _text(m.get("content"))})

    def _assistant(self, m: dict[str, Any]) -> None:
        n = len(self.b.calls) + 1
        raw_usage = m.get("token_usage")
        usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
        prompt, answer, reasoning = (count(usage.get(k)) for k in ("input", "answer", "reasoning"))
        completion = answer + reasoning if answer is not None and reasoning is not None else None
        blocks = [b for b in m.get("blocks", []) if isinstance(b, dict)] if isinstance(m.get("blocks"), list) else []
        requested: list[RequestedCall] = [
            {
                "tool_call_id": nonempty(b.get("tool_call_id")) or "",
                "tool_name": nonempty(b.get("name")) or "",
                "arguments": tool_arguments(b.get("arguments")),
            }
            for b in blocks
            if b.get("kind") == "tool_call"
        ]
        text = "".join(b["text"] for b in blocks if b.get("kind") == "text" and isinstance(b.get("text"), str))
        call_id = self.b.call(
            {
                "model_call_id": self.b.next_call_id(),
                "started_at": None,
                "completed_at": None,
                "protocol": "chat",
                "status_code": 200,
                "response_id": nonempty(m.get("provider_response_id")),
                "finish_reason": None,
                "error_category": None,
                "token_stats": token_stats(
                    prompt=prompt,
                    completion=completion,
                    reasoning=reasoning,
                    # Stirrup's own TokenUsage.total (input + answer + reasoning), from the counts it kept.
                    total=prompt + completion if prompt is not None and completion is not None else None,
                ),
                "invocation_id": INVOCATION_ID,
            }
        )
        self.b.step(n, INVOCATION_ID, None, [call_id])
        self.conversation.append({"role": "assistant", "content": text or None, "tool_calls": requested})
        for tc in requested:
            if tc["tool_name"] != FINISH_TOOL:
                self.b.tool(tool_record(tc, INVOCATION_ID, n), awaits_result=True)

    def failed_call(self, raised: dict[str, Any]) -> None:
        """The reply that ended the run, when the exception Stirrup let escape was an HTTP status error."""
        status = raised.get("status_code")
        if not isinstance(status, int) or isinstance(status, bool):
            return
        self.b.gap(
            "model_calls.only_last_failure",
            "of a run that raised, only the attempt whose error escaped is known (from the exception): "
            "earlier attempts and replies are not",
        )
        self.b.call(
            {
                "model_call_id": self.b.next_call_id(),
                "started_at": None,
                "completed_at": None,
                "protocol": "chat",
                "status_code": status,
                "response_id": None,
                "finish_reason": None,
                "error_category": f"http_{status}",
                "error": raised.get("body"),
                "token_stats": token_stats(),
                "invocation_id": INVOCATION_ID,
            }
        )

    def _tool(self, m: dict[str, Any]) -> None:
        cid = nonempty(m.get("tool_call_id"))
        content = _text(m.get("content"))
        self.conversation.append({"role": "tool", "tool_call_id": cid, "content": content})
        record = self.b.result(cid)
        if record is None:
            return
        record["output"] = content
        found = _EXIT_CODE.search(content or "")
        if found:
            code = int(found.group(1))
            record["exit_code"], record["status"] = code, exit_status(code)
        elif m.get("success") is False:
            # An error result (<error_kind>, bad arguments): the command did not complete.
            record["status"] = "failed"

    def build(self, result: Outcome) -> Rollout:
        self.b.unrecorded_results()
        self.b.invocation(INVOCATION_ID, self.conversation)
        return self.b.build(result)
