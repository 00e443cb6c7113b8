"""CrewAI's own reports (its event bus's events, what kickoff returned or raised) to a probe-rollout/v1 dict.

Model calls are CrewAI's LLM call events: `llm_call_started` and the `llm_call_completed` or `llm_call_failed` of
the same call id (CrewAI's own). Each completed call the agent acted on is a step; the history is the messages of
the task output kickoff returned (or, when it returned none, the messages CrewAI reported sending last); tool
records are the tool calls of that history with the results CrewAI fed back for them.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from orchestrator.harnesses.base import content_text, tool_arguments
from orchestrator.harnesses.crewai.calls import failed_call, protocol_of, reply_call, reported_llm
from orchestrator.harnesses.crewai.record import CrewNative, unrepr
from orchestrator.harnesses.values import count, nonempty, string
from orchestrator.records import (
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

_SDK_RETRIES_GAP: Gap = {
    "code": "model_calls.failed_attempts_unrecorded",
    "detail": "the provider SDK under CrewAI's LLM retries 408/409/429/5xx and connection errors itself (the LLM's "
    "max_retries, as CrewAI reports it, is not 0): attempts it retried emit no event, so they and their error "
    "payloads are absent",
    "labels": ["E1", "E7"],
}
_EXIT_CODE = re.compile(r"\AExit code: (-?\d+)\n")  # our bash tool's first line (images/crewai/probe_crewai.py)
_ALWAYS_GAPS: list[Gap] = [
    {
        "code": "model_calls.status_code_implied",
        "detail": "CrewAI's LLM events carry no HTTP status: a completed call is reported as 200, a failed one "
        "with the status its error text names (the SDK's `Error code: N`), if any",
    },
    {
        "code": "tool_calls.exit_code_in_text",
        "detail": "CrewAI keeps a tool's result as the text it returned; the bash tool of the driver writes the exit "
        "code on its first line, and it is read from there (CrewAI reports a tool that ran as finished either way)",
    },
]


def build_rollout(native: CrewNative, harness: str) -> Rollout:
    b = RolloutBuilder(harness, native.version)
    b.gaps += [gap(code, detail) for code, detail in native.problems]
    invocation = _invocation_id(native)
    llm = reported_llm(native.events)
    protocol = protocol_of(llm)
    if llm.get("max_retries") != 0:
        b.gaps.append(_SDK_RETRIES_GAP)
    calls = _calls(native, b, invocation, protocol)
    conversation = _conversation(native, b)
    step_of = _steps(b, invocation, calls, native)
    _tools(b, invocation, conversation, step_of)
    b.invocation(invocation, conversation, token_totals=_totals(native.returned))
    b.gaps = unique_gaps([*_ALWAYS_GAPS, *b.gaps])
    reports = Counter(nonempty(e.get("call_id")) for e in native.of_type("llm_call_failed"))
    return b.build(
        _outcome(native),
        rollout_id=invocation,
        provenance={"retry_placement": "inferred"} if any(c[1] is None for c in calls) else None,
        extensions={"crewai": {"failures_reported_twice": sorted(k for k, n in reports.items() if k and n > 1)}},
    )


def _totals(returned: dict[str, Any] | None) -> TokenStats | None:
    """The crew's usage as kickoff returned it (CrewOutput.token_usage): CrewAI's own sums over its calls."""
    usage = returned.get("token_usage") if returned else None
    if not isinstance(usage, dict):
        return None
    return token_stats(
        prompt=count(usage.get("prompt_tokens")),
        completion=count(usage.get("completion_tokens")),
        reasoning=count(usage.get("reasoning_tokens")),
        total=count(usage.get("total_tokens")),
        cached=count(usage.get("cached_prompt_tokens")),
    )


def _invocation_id(native: CrewNative) -> str:
    # One crew, one agent, one task: the invocation is the task CrewAI ran, named by its id.
    for e in native.of_type("task_started", "agent_execution_started", "llm_call_started"):
        task = nonempty(e.get("task_id"))
        if task:
            return task
    return "crewai-task"


def _calls(
    native: CrewNative, b: RolloutBuilder, invocation: str, protocol: str | None
) -> list[tuple[str, dict[str, Any] | None]]:
    """Every LLM call CrewAI reported, in the order it started them: (model_call_id, the completed event or None)."""
    started = {nonempty(e.get("call_id")): e for e in native.of_type("llm_call_started")}
    ended: dict[str | None, dict[str, Any]] = {}
    for e in native.of_type("llm_call_completed", "llm_call_failed"):
        # CrewAI reports some failures twice under one call id (its provider and its LLM wrapper each emit
        # llm_call_failed): one call, ended by its first report.
        ended.setdefault(nonempty(e.get("call_id")), e)
    out: list[tuple[str, dict[str, Any] | None]] = []
    for cid, start in started.items():
        if cid is None:
            continue
        end = ended.get(cid)
        if end is None:
            b.gap("model_calls.unfinished", f"LLM call {cid} started and was never reported completed or failed")
            b.call(failed_call(cid, invocation, protocol, start, None))
            out.append((cid, None))
        elif end.get("type") == "llm_call_completed":
            b.call(reply_call(cid, invocation, protocol, start, end))
            out.append((cid, end))
        else:
            b.call(failed_call(cid, invocation, protocol, start, end))
            out.append((cid, None))
    return out


def _steps(
    b: RolloutBuilder, invocation: str, calls: list[tuple[str, dict[str, Any] | None]], native: CrewNative
) -> dict[str, int]:
    """A step is a completed call plus the failed ones CrewAI made before it; returns each tool call id's step."""
    step_of: dict[str, int] = {}
    pending: list[str] = []
    times = {c["model_call_id"]: c["started_at"] for c in b.calls}
    for cid, completed in calls:
        pending.append(cid)
        if completed is None:
            continue
        number = len(b.steps) + 1
        b.step(number, invocation, times.get(pending[0]), pending)
        pending = []
        for tc in _response_tool_calls(completed.get("response")):
            step_of[tc] = number
    if pending:
        b.step(len(b.steps) + 1, invocation, times.get(pending[0]), pending)
    return step_of


def _response_tool_calls(response: Any) -> list[str]:
    """The ids of the tool calls a completed call's response holds (OpenAI, Responses and Anthropic shapes)."""
    items = response if isinstance(response, list) else []
    ids = [nonempty(i.get("call_id")) or nonempty(i.get("id")) for i in items if isinstance(i, dict)]
    return [i for i in ids if i]


def _conversation(native: CrewNative, b: RolloutBuilder) -> list[Message]:
    returned = native.returned
    tasks = returned.get("tasks_output") if returned else None
    messages: Any = None
    if isinstance(tasks, list) and tasks and isinstance(tasks[-1], dict):
        messages = tasks[-1].get("messages")
    if not isinstance(messages, list):
        # No task output: the messages CrewAI reported sending with its last LLM call (written at its depth cap).
        started = native.of_type("llm_call_started")
        raw = started[-1].get("messages") if started else None
        messages = unrepr(raw) if isinstance(raw, list) else []
        ends = native.of_type("llm_call_completed", "llm_call_failed")
        # When that call failed, nothing came after it: the history it sent is the whole of it.
        if not (started and ends and ends[-1].get("type") == "llm_call_failed"):
            b.gap(
                "history.from_last_request",
                "kickoff returned no task output: the history is the messages CrewAI reported sending with its "
                "last LLM call, so the reply to that call and anything after it are not in it",
                ["E4"],
            )
    return [m for m in (_message(x) for x in messages) if m is not None]


def _message(m: Any) -> Message | None:
    if not isinstance(m, dict) or m.get("role") not in ("system", "user", "assistant", "tool"):
        return None
    role = str(m["role"])
    entry: Message = {"role": role, "content": content_text(m.get("content"))}
    if role == "tool":
        entry["tool_call_id"] = nonempty(m.get("tool_call_id"))
    requested = _requested(m.get("tool_calls"))
    if requested:
        entry["tool_calls"] = requested
    return entry


def _requested(raw: Any) -> list[RequestedCall]:
    out: list[RequestedCall] = []
    for tc in raw if isinstance(raw, list) else []:
        function = tc.get("function") if isinstance(tc, dict) else None
        if not isinstance(function, dict):
            continue
        out.append(
            {
                "tool_call_id": nonempty(tc.get("id")) or "",
                "tool_name": nonempty(function.get("name")) or "",
                "arguments": tool_arguments(function.get("arguments")),
            }
        )
    return out


def _tools(b: RolloutBuilder, invocation: str, conversation: list[Message], step_of: dict[str, int]) -> None:
    for m in conversation:
        if m["role"] == "assistant":
            for tc in m.get("tool_calls", []):
                b.tool(tool_record(tc, invocation, step_of.get(tc["tool_call_id"])), awaits_result=True)
        elif m["role"] == "tool":
            record = b.result(m.get("tool_call_id"))
            if record is None:
                continue
            output = m.get("content")
            record["output"] = output
            found = _EXIT_CODE.match(string(output) or "")
            if found:
                code = int(found.group(1))
                record["exit_code"], record["status"] = code, exit_status(code)
    b.unrecorded_results()


def _outcome(native: CrewNative) -> Outcome:
    returned, raised = native.returned, native.raised
    if returned is not None:
        raw = returned.get("raw")
        return outcome("completed", final_answer=raw if isinstance(raw, str) else None)
    if raised is not None:
        kind = nonempty(raised.get("type")) or "exception"
        return outcome("error", failure_kind=kind, failure_reason=nonempty(raised.get("message")) or kind)
    failed = native.of_type("crew_kickoff_failed", "task_failed", "agent_execution_error")
    if failed:
        error = nonempty(failed[-1].get("error"))
        return outcome("error", failure_kind=str(failed[-1]["type"]), failure_reason=error or str(failed[-1]["type"]))
    return outcome("unknown")
