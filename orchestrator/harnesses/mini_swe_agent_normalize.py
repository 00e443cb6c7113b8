"""mini-SWE-agent's trajectory JSON (`-o PATH`, format mini-swe-agent-1.1) to a probe-rollout/v1 dict."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from orchestrator.harnesses.base import NormalizeError, tool_arguments

__all__ = ["TRAJECTORY_NAME", "normalize_trajectory"]

TRAJECTORY_NAME = "trajectory.json"
# mini has one agent run per trajectory file and no id for it: one invocation under a name of ours.
INVOCATION_ID = "mini-run"
SUBMITTED = "Submitted"
_CONVERSATION_ROLES = frozenset({"system", "user", "assistant", "tool"})
# The raw response's `object` names the protocol the model class spoke (litellm vs litellm_response classes);
# without one, the default litellm class, which speaks Chat Completions.
_PROTOCOL_OF_OBJECT = {"chat.completion": "chat", "response": "responses"}

# Facts mini's trajectory format has no place for, true of every run, named so no check mistakes absence for zero.
_STRUCTURAL_GAPS = (
    {
        "code": "model_calls.failed_attempts_unrecorded",
        "detail": "mini records only replies it parsed: attempts retried by its own loop or the SDK under litellm "
        "(429, 5xx, timeouts, 400) leave no trace, so failed attempts and their error payloads are absent",
        "labels": ["E1", "E7"],
    },
    {
        "code": "model_calls.started_at_unrecorded",
        "detail": "an assistant message carries one timestamp, taken after the reply was parsed; when the request "
        "was sent is not recorded",
        "labels": ["E1"],
    },
    {
        "code": "model_calls.status_code_implied",
        "detail": "mini records the parsed reply, not the HTTP status; a recorded reply is reported as status 200",
    },
    {
        "code": "steps.timestamp_is_reply_time",
        "detail": "a step's timestamp is that of its assistant message, taken when the reply had been parsed",
    },
)


def normalize_trajectory(path: Path, harness: str) -> dict[str, Any]:
    """Read the trajectory at `path`; NormalizeError when it is absent, truncated or not a trajectory at all."""
    if not path.is_file():
        raise NormalizeError(f"the harness wrote no trajectory ({path.name} missing in native/)")
    try:
        data = json.loads(path.read_bytes())
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        # mini rewrites the whole file after every step (not atomically): a kill mid-write truncates it.
        raise NormalizeError(f"{path.name} is not JSON (truncated or corrupt): {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        raise NormalizeError(f"{path.name} is not a mini-swe-agent trajectory (no `messages` list)")
    info = _dict(data.get("info"))
    return _Builder(harness, info, [m for m in data["messages"] if isinstance(m, dict)]).build()


def _iso(seconds: Any) -> str | None:
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        return None
    try:
        moment = datetime.fromtimestamp(float(seconds), UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _count(value: Any) -> int | None:
    # A count the reply did not carry stays unknown; bool is no count.
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content parts (multimodal messages)
        return "".join(p["text"] for p in value if isinstance(p, dict) and isinstance(p.get("text"), str))
    return None


def _token_stats(usage: Any) -> dict[str, int | None]:
    u = _dict(usage)
    return {
        "prompt": _count(u.get("prompt_tokens")),
        "completion": _count(u.get("completion_tokens")),
        "reasoning": _count(_dict(u.get("completion_tokens_details")).get("reasoning_tokens")),
        "total": _count(u.get("total_tokens")),
        "cached": _count(_dict(u.get("prompt_tokens_details")).get("cached_tokens")),
    }


def _requested_calls(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool calls of an assistant message, in the rollout's conversation shape."""
    calls = message.get("tool_calls")
    out = []
    for tc in calls if isinstance(calls, list) else []:
        if not isinstance(tc, dict):
            continue
        fn = _dict(tc.get("function"))
        out.append(
            {
                "tool_call_id": _str_or_none(tc.get("id")) or "",
                "tool_name": _str_or_none(fn.get("name")) or "",
                "arguments": tool_arguments(fn.get("arguments")),
            }
        )
    return out


class _Builder:
    """One pass over the messages, in order: calls, steps, tool records and the conversation."""

    def __init__(self, harness: str, info: dict[str, Any], messages: list[dict[str, Any]]) -> None:
        self.harness = harness
        self.info = info
        self.messages = messages
        self.calls: list[dict[str, Any]] = []
        self.steps: list[dict[str, Any]] = []
        self.tools: list[dict[str, Any]] = []
        self.conversation: list[dict[str, Any]] = []
        self.gaps: list[dict[str, Any]] = [dict(g) for g in _STRUCTURAL_GAPS]
        self._pending: dict[str, dict[str, Any]] = {}  # tool_call_id -> its tool record, awaiting its result

    def build(self) -> dict[str, Any]:
        exit_message: dict[str, Any] | None = None
        for m in self.messages:
            role = _str_or_none(m.get("role"))
            extra = _dict(m.get("extra"))
            if role == "exit":
                exit_message = m
                continue
            # A reply mini could not parse (FormatError) is kept only inside the user message reporting it.
            step_no = self._model_call(extra) if "response" in extra else None
            if role in _CONVERSATION_ROLES:
                self._converse(m, role, extra, step_no)
        for record in self._pending.values():
            self.gaps.append(
                {
                    "code": "tool_calls.result_unrecorded",
                    "detail": f"no tool message records the result of {record['tool_call_id']}",
                    "labels": ["E5"],
                }
            )
        model_calls_refs = [c["model_call_id"] for c in self.calls]
        return {
            "schema": "probe-rollout/v1",
            "harness": {"name": self.harness, "version": _str_or_none(self.info.get("mini_version"))},
            "task_id": None,
            "rollout_id": None,
            "model_calls": self.calls,
            "invocations": [
                {
                    "invocation_id": INVOCATION_ID,
                    "parent_invocation_id": None,
                    "model_call_refs": model_calls_refs,
                    "conversation": self.conversation,
                }
            ],
            "steps": self.steps,
            "tool_calls": self.tools,
            "outcome": self._outcome(exit_message),
            "gaps": self.gaps,
            "extensions": {"mini_swe_agent": {"model_stats": self.info.get("model_stats")}},
        }

    def _model_call(self, extra: dict[str, Any]) -> int:
        """Record the call and its step (mini makes one call per step); returns the step number."""
        response = extra["response"]
        n = len(self.calls) + 1
        if not isinstance(response, dict):
            # mini falls back to repr() for a reply it could not dump: the call happened, its facts are lost.
            self.gaps.append(
                {
                    "code": "model_calls.response_unreadable",
                    "detail": f"model call {n}: the recorded response is not an object",
                    "labels": ["E1", "E2"],
                }
            )
            response = {}
        choices = response.get("choices")
        first = _dict(choices[0]) if isinstance(choices, list) and choices else {}
        response_id = _str_or_none(response.get("id"))
        call_id = f"call-{n}"
        self.calls.append(
            {
                "model_call_id": call_id,
                "started_at": None,
                "completed_at": _iso(extra.get("timestamp")),
                "protocol": _PROTOCOL_OF_OBJECT.get(str(response.get("object")), "chat"),
                "response": response or None,
                "status_code": 200 if response else None,
                "response_id": response_id,
                "finish_reason": _str_or_none(first.get("finish_reason")),
                "error_category": None,
                "token_stats": _token_stats(response.get("usage")),
                "invocation_id": INVOCATION_ID,
            }
        )
        self.steps.append(
            {
                "step_no": n,
                "invocation_id": INVOCATION_ID,
                "timestamp": _iso(extra.get("timestamp")),
                "model_call_refs": [call_id],
            }
        )
        return n

    def _converse(self, message: dict[str, Any], role: str, extra: dict[str, Any], step_no: int | None) -> None:
        entry: dict[str, Any] = {"role": role, "content": _text(message.get("content"))}
        if role == "assistant":
            requested = _requested_calls(message)
            entry["tool_calls"] = requested
            # Only parsed actions were executed; each becomes a tool record, completed by its tool message.
            actions = extra.get("actions")
            executed = {
                _str_or_none(a.get("tool_call_id"))
                for a in (actions if isinstance(actions, list) else [])
                if isinstance(a, dict)
            }
            for tc in requested:
                if tc["tool_call_id"] and tc["tool_call_id"] in executed:
                    self._pending[tc["tool_call_id"]] = self._tool_record(tc, step_no)
        elif role == "tool":
            cid = message.get("tool_call_id")
            entry["tool_call_id"] = cid if isinstance(cid, str) else None
            record = self._pending.pop(entry["tool_call_id"], None) if entry["tool_call_id"] else None
            if record is not None:
                code = extra.get("returncode")
                record["exit_code"] = _count_signed(code)
                if record["exit_code"] is not None:
                    record["status"] = "succeeded" if record["exit_code"] == 0 else "failed"
                record["output"] = entry["content"]
        self.conversation.append(entry)

    def _tool_record(self, tc: dict[str, Any], step_no: int | None) -> dict[str, Any]:
        record = {
            **tc,
            "status": None,
            "exit_code": None,
            "output": None,
            "invocation_id": INVOCATION_ID,
            "step_no": step_no,
        }
        self.tools.append(record)
        return record

    def _outcome(self, exit_message: dict[str, Any] | None) -> dict[str, Any]:
        extra = _dict(exit_message.get("extra")) if exit_message else {}
        status = _str_or_none(extra.get("exit_status")) or _str_or_none(self.info.get("exit_status"))
        if not status:
            # Killed mid-run: the last save shows neither a submission nor an error.
            return {"final_answer": None, "status": "unknown", "failure_kind": None, "failure_reason": None}
        if status == SUBMITTED:
            answer = extra.get("submission", self.info.get("submission"))
            return {
                "final_answer": answer if isinstance(answer, str) else None,
                "status": "completed",
                "failure_kind": None,
                "failure_reason": None,
            }
        reason = extra.get("exception_str") or (exit_message or {}).get("content") or status
        return {"final_answer": None, "status": "error", "failure_kind": status, "failure_reason": str(reason)}


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _count_signed(value: Any) -> int | None:
    # mini records -1 for an action it says did not run: kept as recorded, it is what the model was shown.
    return value if isinstance(value, int) and not isinstance(value, bool) else None
