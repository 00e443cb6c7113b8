"""Stirrup's run record (what `session.run` returned, saved by our driver) to a probe-rollout/v1 dict.

The record holds `returned: {finish_params, history, metadata}` exactly as Stirrup returned them (pydantic's JSON
form), or `raised: {type, message}` when `session.run` raised instead. Everything here comes from those values:
the history's assistant messages are the model calls Stirrup kept, its tool messages the results it fed back.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from orchestrator.harnesses.base import NormalizeError, tool_arguments

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
_STRUCTURAL_GAPS = (
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


def normalize_record(path: Path, harness: str) -> dict[str, Any]:
    """Read the run record at `path`; NormalizeError when it is absent, corrupt or not a run record."""
    if not path.is_file():
        raise NormalizeError(f"the driver wrote no run record ({path.name} missing in native/)")
    try:
        data = json.loads(path.read_bytes())
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise NormalizeError(f"{path.name} is not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != RECORD_FORMAT:
        raise NormalizeError(f"{path.name} is not a Stirrup run record (format {RECORD_FORMAT!r})")
    returned, raised = data.get("returned"), data.get("raised")
    if isinstance(returned, dict) and isinstance(returned.get("history"), list):
        builder = _Builder(harness, data.get("stirrup_version"))
        for group in returned["history"]:
            for message in group if isinstance(group, list) else []:
                if isinstance(message, dict):
                    builder.message(message)
        return builder.build(_finished(returned.get("finish_params")))
    if isinstance(raised, dict):
        builder = _Builder(harness, data.get("stirrup_version"))
        builder.gaps.append(
            {
                "code": "history.not_returned",
                "detail": "session.run raised instead of returning, so Stirrup handed back no history: every reply, "
                "step and tool call of the run is unrecorded",
                "labels": ["E1", "E3", "E4", "E5"],
            }
        )
        kind = _str(raised.get("type")) or "exception"
        builder.failed_call(raised)
        return builder.build(
            {
                "final_answer": None,
                "status": "error",
                "failure_kind": kind,
                "failure_reason": _str(raised.get("message")) or kind,
            }
        )
    raise NormalizeError(f"{path.name} records neither returned values nor a raised exception")


def _finished(finish_params: Any) -> dict[str, Any]:
    if isinstance(finish_params, dict):
        reason = finish_params.get("reason")
        return {
            "final_answer": reason if isinstance(reason, str) else None,
            "status": "completed",
            "failure_kind": None,
            "failure_reason": None,
        }
    # Stirrup returns finish_params None when max_turns ran out without a finish call.
    return {
        "final_answer": None,
        "status": "error",
        "failure_kind": "max_turns",
        "failure_reason": "session.run returned without finish params (maximum number of turns reached)",
    }


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content blocks: text parts only (images are not model-visible text)
        parts = [p if isinstance(p, str) else p.get("text") for p in content if isinstance(p, str | dict)]
        return "".join(p for p in parts if isinstance(p, str))
    return None


class _Builder:
    """One pass over the history in order: calls, steps, tool records and the conversation."""

    def __init__(self, harness: str, version: Any) -> None:
        self.harness = harness
        self.version = _str(version)
        self.calls: list[dict[str, Any]] = []
        self.steps: list[dict[str, Any]] = []
        self.tools: list[dict[str, Any]] = []
        self.conversation: list[dict[str, Any]] = []
        self.gaps: list[dict[str, Any]] = [dict(g) for g in _STRUCTURAL_GAPS]
        self._pending: dict[str, dict[str, Any]] = {}

    def message(self, m: dict[str, Any]) -> None:
        role = m.get("role")
        if role == "assistant":
            self._assistant(m)
        elif role == "tool":
            self._tool(m)
        elif role in ("system", "user"):
            self.conversation.append({"role": role, "content": _text(m.get("content"))})

    def _assistant(self, m: dict[str, Any]) -> None:
        n = len(self.calls) + 1
        call_id = f"call-{n}"
        raw_usage = m.get("token_usage")
        usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
        prompt, answer, reasoning = (_count(usage.get(k)) for k in ("input", "answer", "reasoning"))
        completion = answer + reasoning if answer is not None and reasoning is not None else None
        blocks = [b for b in m.get("blocks", []) if isinstance(b, dict)] if isinstance(m.get("blocks"), list) else []
        requested = [
            {
                "tool_call_id": _str(b.get("tool_call_id")) or "",
                "tool_name": _str(b.get("name")) or "",
                "arguments": tool_arguments(b.get("arguments")),
            }
            for b in blocks
            if b.get("kind") == "tool_call"
        ]
        text = "".join(b["text"] for b in blocks if b.get("kind") == "text" and isinstance(b.get("text"), str))
        self.calls.append(
            {
                "model_call_id": call_id,
                "started_at": None,
                "completed_at": None,
                "protocol": "chat",
                "status_code": 200,
                "response_id": _str(m.get("provider_response_id")),
                "finish_reason": None,
                "error_category": None,
                "token_stats": {
                    "prompt": prompt,
                    "completion": completion,
                    "reasoning": reasoning,
                    # Stirrup's own TokenUsage.total (input + answer + reasoning), from the counts it kept.
                    "total": prompt + completion if prompt is not None and completion is not None else None,
                    "cached": None,
                },
                "invocation_id": INVOCATION_ID,
            }
        )
        self.steps.append(
            {"step_no": n, "invocation_id": INVOCATION_ID, "timestamp": None, "model_call_refs": [call_id]}
        )
        self.conversation.append({"role": "assistant", "content": text or None, "tool_calls": requested})
        for tc in requested:
            if tc["tool_name"] == FINISH_TOOL:
                continue
            record = {
                **tc,
                "status": None,
                "exit_code": None,
                "output": None,
                "invocation_id": INVOCATION_ID,
                "step_no": n,
            }
            self.tools.append(record)
            if tc["tool_call_id"]:
                self._pending[tc["tool_call_id"]] = record

    def failed_call(self, raised: dict[str, Any]) -> None:
        """The reply that ended the run, when the exception Stirrup let escape was an HTTP status error."""
        status = raised.get("status_code")
        if not isinstance(status, int) or isinstance(status, bool):
            return
        self.gaps.append(
            {
                "code": "model_calls.only_last_failure",
                "detail": "of a run that raised, only the attempt whose error escaped is known (from the exception): "
                "earlier attempts and replies are not",
            }
        )
        call_id = f"call-{len(self.calls) + 1}"
        self.calls.append(
            {
                "model_call_id": call_id,
                "started_at": None,
                "completed_at": None,
                "protocol": "chat",
                "status_code": status,
                "response_id": None,
                "finish_reason": None,
                "error_category": f"http_{status}",
                "error": raised.get("body"),
                "token_stats": {k: None for k in ("prompt", "completion", "reasoning", "total", "cached")},
                "invocation_id": INVOCATION_ID,
            }
        )

    def _tool(self, m: dict[str, Any]) -> None:
        cid = _str(m.get("tool_call_id"))
        content = _text(m.get("content"))
        self.conversation.append({"role": "tool", "tool_call_id": cid, "content": content})
        record = self._pending.pop(cid, None) if cid else None
        if record is None:
            return
        record["output"] = content
        found = _EXIT_CODE.search(content or "")
        if found:
            record["exit_code"] = int(found.group(1))
            record["status"] = "succeeded" if record["exit_code"] == 0 else "failed"
        elif m.get("success") is False:
            # An error result (<error_kind>, bad arguments): the command did not complete.
            record["status"] = "failed"

    def build(self, outcome: dict[str, Any]) -> dict[str, Any]:
        for cid in self._pending:
            self.gaps.append(
                {
                    "code": "tool_calls.result_unrecorded",
                    "detail": f"no tool message records the result of {cid}",
                    "labels": ["E5"],
                }
            )
        return {
            "schema": "probe-rollout/v1",
            "harness": {"name": self.harness, "version": self.version},
            "task_id": None,
            "rollout_id": None,
            "model_calls": self.calls,
            "invocations": [
                {
                    "invocation_id": INVOCATION_ID,
                    "parent_invocation_id": None,
                    "model_call_refs": [c["model_call_id"] for c in self.calls],
                    "conversation": self.conversation,
                }
            ],
            "steps": self.steps,
            "tool_calls": self.tools,
            "outcome": outcome,
            "gaps": self.gaps,
        }
