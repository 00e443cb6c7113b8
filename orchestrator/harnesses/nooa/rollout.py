"""NOOA's own records in /logs/agent -> probe-rollout/v1: OTel call spans, the trajectory.json event dump, result.json.

The span files give the model calls (one `acompletion` span per LiteLLM call: times, status, tokens, finish reason,
the messages sent, the tool calls received); the runner's trajectory.json (every recorded event of the agent) gives
the tool calls it executed and their output; result.json gives how the run ended and the answer it reports.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from orchestrator.harnesses.base import NormalizeError, content_text, tool_arguments
from orchestrator.harnesses.jsonl import loads_line
from orchestrator.harnesses.nooa.spans import LlmSpan, read_llm_spans
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
    exit_status,
    gap,
    outcome,
    token_stats,
)

__all__ = ["FINISH_TOOL", "normalize_logs"]

# BenchAgent's finish tool: its call is the outcome, not an executed tool.
FINISH_TOOL = "return_result"
CODE_TOOL = "execute_python"
INVOCATION_FALLBACK = "nooa-session"
# ShellTools' ShellResult repr (nooa.tools.shell_tools): return_code is shown only when it is not 0.
_BASH_OUTPUT = re.compile(r"\ABashOutput\(.*?(?:, return_code=(-?\d+))?\)\s*\Z", re.S)

_GAPS: tuple[Gap, ...] = (
    {
        "code": "model_calls.sdk_retries_unrecorded",
        "detail": "a span records one litellm.acompletion call; the attempts the openai SDK retried inside it (408, "
        "409, 429, 5xx, timeouts) leave no span, so those attempts and their errors are unrecorded",
        "labels": ["E1", "E7"],
    },
    {
        "code": "model_calls.response_id_unrecorded",
        "detail": "the LiteLLM call spans keep no provider response id (output.value is empty)",
    },
    {
        "code": "model_calls.status_code_implied",
        "detail": "a call span records OK or ERROR, not the HTTP status: an OK span is reported as 200, a failed "
        "one's status is read from the openai SDK's 'Error code: N' in the exception text it recorded",
    },
    {
        "code": "steps.turns_unrecorded",
        "detail": "NOOA's turn events (BeforeTurn/AfterTurn) are runtime events it never records: a step is a run "
        "of failed calls and the reply that ended them, placed by the calls' order",
        "labels": ["E3"],
    },
    {
        "code": "tool_calls.exit_code_in_text",
        "detail": "an execute_python cell records only whether the cell ran; the shell command's exit status is in "
        "the BashOutput repr the cell printed (return_code shown when not 0) and is read from there",
    },
    {
        "code": "tool_calls.prefill_excluded",
        "detail": "before the first model call NOOA runs an inspect-inputs cell of its own and shows it to the model "
        "as an assistant execute_python call (id prefill_*); its trajectory marks it prefill, and it is left out "
        "of the tool records (it stays in the conversation)",
    },
    {
        "code": "outcome.answer_is_command_to_verify",
        "detail": "the runner's result.json reports TaskResult.command_to_verify as the run's response (and writes "
        "it to /app/answer.txt): that is the final answer here; success is judged by solution_description",
    },
)


def _read(path: Path) -> Any:
    try:
        return loads_line(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def normalize_logs(logs: Path, answer_dir: Path, harness: str) -> Rollout:
    """NOOA's /logs/agent copy -> a rollout; NormalizeError when it holds none of NOOA's records."""
    traces = logs / "traces"
    trajectory_path, result_path = logs / "trajectory.json", logs / "result.json"
    if not (traces.is_dir() or trajectory_path.is_file() or result_path.is_file()):
        raise NormalizeError(f"NOOA wrote none of traces/, trajectory.json, result.json in {logs.name}/")
    spans, bad_lines = read_llm_spans(traces)
    version = next(
        (s.resource.get("nooa.version") for s in spans if isinstance(s.resource.get("nooa.version"), str)), None
    )
    b = RolloutBuilder(harness, version, _GAPS)
    if bad_lines:
        b.gap("spans.unreadable_lines", f"{bad_lines} span file line(s) are not JSON")
    if not spans:
        b.gap(
            "model_calls.unrecorded",
            "no LiteLLM call span in traces/: every model call of the run is unrecorded",
            ["E1", "E2", "E3"],
        )
    session = next((s.text("session.id") for s in spans if s.text("session.id")), None)
    inv = session or INVOCATION_FALLBACK
    step_of_call = _calls_and_steps(b, spans, inv)
    events = _read(trajectory_path)
    if not isinstance(events, list):
        events = []
        b.gap(
            "tool_calls.trajectory_unwritten",
            "trajectory.json is absent or not a JSON list (the runner writes it only when the agent "
            "returned): the executed tool calls and their outputs are unrecorded",
            ["E5"],
        )
    for record in _tool_records([e for e in events if isinstance(e, dict)], step_of_call, inv):
        b.tool(record)
    result = _outcome(_read(result_path), b.gaps)
    b.invocation(inv, _marked(_conversation(spans), _prefilled([e for e in events if isinstance(e, dict)])))
    return b.build(
        result,
        rollout_id=session,
        # Failed calls are separate spans with no turn of their own: placed in the step of the next reply.
        provenance={"retry_placement": "inferred"},
        extensions={"nooa": {"answer_file": _answer(answer_dir), "llm_spans": len(spans)}},
    )


def _call(n: int, span: LlmSpan, inv: str) -> ModelCall:
    failed = span.failed
    tokens = token_stats(
        prompt=span.count("llm.token_count.prompt"),
        completion=span.count("llm.token_count.completion"),
        reasoning=span.count("llm.token_count.completion_details.reasoning"),
        total=span.count("llm.token_count.total"),
        cached=span.count("llm.token_count.prompt_details.cache_read"),
    )
    record: ModelCall = {
        "model_call_id": f"acompletion-{n}",
        "started_at": span.iso(span.start_ns),
        "completed_at": span.iso(span.end_ns),
        "protocol": "chat",
        "status_code": span.status_code if failed else 200,
        "response_id": None,
        "finish_reason": None if failed else span.text("llm.finish_reason"),
        "error_category": (f"http_{span.status_code}" if span.status_code else span.exception_type or "error")
        if failed
        else None,
        "token_stats": tokens,
        "invocation_id": inv,
    }
    if failed:
        record["error"] = span.error
    return record


def _calls_and_steps(b: RolloutBuilder, spans: list[LlmSpan], inv: str) -> dict[str, int]:
    """Calls in start order; a step is the failed calls before a reply plus that reply (trailing failures: one).
    Returns the step that received each tool call id."""
    step_of_call: dict[str, int] = {}
    pending: list[ModelCall] = []
    for n, span in enumerate(spans, start=1):
        call = _call(n, span, inv)
        b.call(call)
        pending.append(call)
        if span.failed:
            continue
        step = b.step(len(b.steps) + 1, inv, call["completed_at"], [c["model_call_id"] for c in pending])
        for tool_call_id in span.output_tool_call_ids():
            step_of_call.setdefault(tool_call_id, step["step_no"])
        pending = []
    if pending:
        b.step(len(b.steps) + 1, inv, pending[-1]["completed_at"], [c["model_call_id"] for c in pending])
    return step_of_call


def _exit_code(output: str | None) -> int | None:
    m = _BASH_OUTPUT.match(output or "")
    if m is None:
        return None
    return int(m.group(1)) if m.group(1) is not None else 0


def _tool_records(events: list[dict[str, Any]], step_of_call: dict[str, int], inv: str) -> list[ToolRecord]:
    outputs = {
        e["tool_call_id"]: e
        for e in events
        if e.get("event_type") == "PythonOutput" and isinstance(e.get("tool_call_id"), str)
    }
    records: list[ToolRecord] = []
    for e in events:
        metadata = _dict(e.get("metadata"))
        if e.get("event_type") != "ToolCallEvent" or metadata.get("prefill") or metadata.get("synthetic"):
            continue
        name = string(e.get("name")) or ""
        if name == FINISH_TOOL:
            continue
        cid = string(e.get("tool_call_id")) or ""
        if not cid:
            continue  # an event naming no call cannot be a tool record (NOOA gives every call its wire id)
        printed = outputs.get(cid)
        result = _dict(e.get("result"))
        output = string(printed.get("stdout")) if printed else string(result.get("content"))
        ran = (printed or {}).get("execution_status") or result.get("result_status")
        code = _exit_code(output) if name == CODE_TOOL else None
        if ran == "complete" and code is not None:
            status: str | None = exit_status(code)
        elif ran == "error":
            status = "failed"
        else:
            status = None
        records.append(
            {
                "tool_call_id": cid,
                "tool_name": name,
                "arguments": tool_arguments(e.get("arguments")),
                "status": status,
                "exit_code": code,
                "output": output,
                "invocation_id": inv,
                "step_no": step_of_call.get(cid),
            }
        )
    return records


def _outcome(result: Any, gaps: list[Gap]) -> Outcome:
    if not isinstance(result, dict) or not isinstance(result.get("success"), bool):
        gaps.append(
            gap(
                "outcome.result_unwritten",
                "result.json is absent or has no boolean success: how the run ended is unrecorded",
                ["E6"],
            )
        )
        return outcome("unknown")
    if result["success"]:
        return outcome("completed", final_answer=string(result.get("response")))
    error = string(result.get("error"))
    return outcome(
        "error",
        failure_kind="agent_error" if error else "unsuccessful",
        failure_reason=error or "result.json reports success false without an error",
    )


def _conversation(spans: list[LlmSpan]) -> list[Message]:
    """What the last recorded call was sent, and the reply it got: the history as NOOA's tracer kept it."""
    last = next((s for s in reversed(spans) if s.input_messages() is not None), None)
    if last is None:
        return []
    conv = [
        _message(m) for m in last.input_messages() or [] if m.get("role") in ("system", "user", "assistant", "tool")
    ]
    if not last.failed:
        conv.append(_reply(last))
    return conv


def _prefilled(events: list[dict[str, Any]]) -> set[str]:
    """The calls NOOA's trajectory marks as its own (`metadata.prefill` or `synthetic`): not the model's."""
    return {
        cid
        for e in events
        if e.get("event_type") == "ToolCallEvent"
        and (_dict(e.get("metadata")).get("prefill") or _dict(e.get("metadata")).get("synthetic"))
        and (cid := string(e.get("tool_call_id")))
    }


def _marked(conversation: list[Message], own: set[str]) -> list[Message]:
    """Assistant turns whose calls NOOA's own record marks as its own, marked `origin: harness`."""
    for m in conversation:
        ids = {c["tool_call_id"] for c in m.get("tool_calls", [])}
        if m["role"] == "assistant" and ids and ids <= own:
            m["origin"] = "harness"
    return conversation


def _message(m: dict[str, Any]) -> Message:
    role = m["role"]
    out: Message = {"role": role, "content": content_text(m.get("content"))}
    if role == "assistant":
        raw = m.get("tool_calls")
        calls = [_dict(c) for c in raw] if isinstance(raw, list) else []
        out["tool_calls"] = [
            {
                "tool_call_id": string(c.get("id")) or "",
                "tool_name": string(_dict(c.get("function")).get("name")) or "",
                "arguments": tool_arguments(_dict(c.get("function")).get("arguments")),
            }
            for c in calls
        ]
    elif role == "tool":
        out["tool_call_id"] = string(m.get("tool_call_id"))
    return out


def _reply(span: LlmSpan) -> Message:
    prefix = "llm.output_messages.0.message."
    calls: list[RequestedCall] = []
    for i, cid in enumerate(span.output_tool_call_ids()):
        base = f"{prefix}tool_calls.{i}.tool_call."
        calls.append(
            {
                "tool_call_id": cid,
                "tool_name": span.text(base + "function.name") or "",
                "arguments": tool_arguments(span.attributes.get(base + "function.arguments")),
            }
        )
    return {"role": "assistant", "content": span.text(prefix + "content"), "tool_calls": calls}


def _answer(answer_dir: Path) -> str | None:
    path = answer_dir / "answer.txt"
    try:
        return path.read_bytes()[:65536].decode(errors="replace") if path.is_file() else None
    except OSError:
        return None
