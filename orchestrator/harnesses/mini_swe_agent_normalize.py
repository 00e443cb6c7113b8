"""mini-SWE-agent's trajectory JSON (`-o PATH`, format mini-swe-agent-1.1) to a probe-rollout/v1 dict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from orchestrator.harnesses.base import NormalizeError, content_text, tool_arguments
from orchestrator.harnesses.jsonl import loads_line
from orchestrator.harnesses.values import count, epoch_iso, integer, nonempty, string
from orchestrator.records import (
    Gap,
    Message,
    Outcome,
    RequestedCall,
    Rollout,
    RolloutBuilder,
    TokenStats,
    exit_status,
    outcome,
    token_stats,
    tool_record,
)

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
_STRUCTURAL_GAPS: tuple[Gap, ...] = (
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


def normalize_trajectory(path: Path, harness: str) -> Rollout:
    """Read the trajectory at `path`; NormalizeError when it is absent, truncated or not a trajectory at all."""
    if not path.is_file():
        raise NormalizeError(f"the harness wrote no trajectory ({path.name} missing in native/)")
    try:
        data = loads_line(path.read_bytes())
    except (ValueError, RecursionError) as exc:
        # mini rewrites the whole file after every step (not atomically): a kill mid-write truncates it.
        raise NormalizeError(f"{path.name} is not JSON (truncated or corrupt): {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        raise NormalizeError(f"{path.name} is not a mini-swe-agent trajectory (no `messages` list)")
    info = _dict(data.get("info"))
    return _read(harness, info, [m for m in data["messages"] if isinstance(m, dict)])


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _token_stats(usage: Any) -> TokenStats:
    u = _dict(usage)
    return token_stats(
        prompt=count(u.get("prompt_tokens")),
        completion=count(u.get("completion_tokens")),
        reasoning=count(_dict(u.get("completion_tokens_details")).get("reasoning_tokens")),
        total=count(u.get("total_tokens")),
        cached=count(_dict(u.get("prompt_tokens_details")).get("cached_tokens")),
    )


def _requested_calls(message: dict[str, Any]) -> list[RequestedCall]:
    """The tool calls of an assistant message, in the rollout's conversation shape."""
    calls = message.get("tool_calls")
    out: list[RequestedCall] = []
    for tc in calls if isinstance(calls, list) else []:
        if not isinstance(tc, dict):
            continue
        fn = _dict(tc.get("function"))
        out.append(
            {
                "tool_call_id": nonempty(tc.get("id")) or "",
                "tool_name": nonempty(fn.get("name")) or "",
                "arguments": tool_arguments(fn.get("arguments")),
            }
        )
    return out


def _read(harness: str, info: dict[str, Any], messages: list[dict[str, Any]]) -> Rollout:
    """One pass over the messages, in order: calls, steps, tool records and the conversation."""
    b = RolloutBuilder(harness, nonempty(info.get("mini_version")), _STRUCTURAL_GAPS)
    conversation: list[Message] = []
    exit_message: dict[str, Any] | None = None
    for m in messages:
        role = nonempty(m.get("role"))
        extra = _dict(m.get("extra"))
        if role == "exit":
            exit_message = m
            continue
        # A reply mini could not parse (FormatError) is kept only inside the user message reporting it.
        step_no = _model_call(b, extra) if "response" in extra else None
        if role in _CONVERSATION_ROLES:
            conversation.append(_converse(b, m, role, extra, step_no))
    b.unrecorded_results()
    b.invocation(INVOCATION_ID, conversation)
    return b.build(
        _outcome(info, exit_message), extensions={"mini_swe_agent": {"model_stats": info.get("model_stats")}}
    )


def _model_call(b: RolloutBuilder, extra: dict[str, Any]) -> int:
    """Record the call and its step (mini makes one call per step); returns the step number."""
    response = extra["response"]
    n = len(b.calls) + 1
    if not isinstance(response, dict):
        # mini falls back to repr() for a reply it could not dump: the call happened, its facts are lost.
        b.gap(
            "model_calls.response_unreadable", f"model call {n}: the recorded response is not an object", ["E1", "E2"]
        )
        response = {}
    choices = response.get("choices")
    first = _dict(choices[0]) if isinstance(choices, list) and choices else {}
    call_id = b.call(
        {
            "model_call_id": b.next_call_id(),
            "started_at": None,
            "completed_at": epoch_iso(extra.get("timestamp")),
            "protocol": _PROTOCOL_OF_OBJECT.get(str(response.get("object")), "chat"),
            "response": response or None,
            "status_code": 200 if response else None,
            "response_id": nonempty(response.get("id")),
            "finish_reason": nonempty(first.get("finish_reason")),
            "error_category": None,
            "token_stats": _token_stats(response.get("usage")),
            "invocation_id": INVOCATION_ID,
        }
    )
    b.step(n, INVOCATION_ID, epoch_iso(extra.get("timestamp")), [call_id])
    return n


def _converse(
    b: RolloutBuilder, message: dict[str, Any], role: str, extra: dict[str, Any], step_no: int | None
) -> Message:
    entry: Message = {"role": role, "content": content_text(message.get("content"))}
    if role == "assistant":
        requested = _requested_calls(message)
        entry["tool_calls"] = requested
        # Only parsed actions were executed; each becomes a tool record, completed by its tool message.
        actions = extra.get("actions")
        executed = {
            nonempty(a.get("tool_call_id"))
            for a in (actions if isinstance(actions, list) else [])
            if isinstance(a, dict)
        }
        for tc in requested:
            if tc["tool_call_id"] and tc["tool_call_id"] in executed:
                b.tool(tool_record(tc, INVOCATION_ID, step_no), awaits_result=True)
    elif role == "tool":
        cid = string(message.get("tool_call_id"))
        entry["tool_call_id"] = cid
        record = b.result(cid)
        if record is not None:
            # mini records -1 for an action it says did not run: kept as recorded, it is what the model was shown.
            record["exit_code"] = integer(extra.get("returncode"))
            if record["exit_code"] is not None:
                record["status"] = exit_status(record["exit_code"])
            record["output"] = entry["content"]
    return entry


def _outcome(info: dict[str, Any], exit_message: dict[str, Any] | None) -> Outcome:
    extra = _dict(exit_message.get("extra")) if exit_message else {}
    status = nonempty(extra.get("exit_status")) or nonempty(info.get("exit_status"))
    if not status:
        # Killed mid-run: the last save shows neither a submission nor an error.
        return outcome("unknown")
    if status == SUBMITTED:
        answer = extra.get("submission", info.get("submission"))
        return outcome("completed", final_answer=answer if isinstance(answer, str) else None)
    reason = extra.get("exception_str") or (exit_message or {}).get("content") or status
    return outcome("error", failure_kind=status, failure_reason=str(reason))
