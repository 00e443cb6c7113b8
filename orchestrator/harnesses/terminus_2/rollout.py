"""Terminus 2's own records -> probe-rollout/v1: its ATIF trajectory, and per episode the debug.json LiteLLM wrote.

The trajectory gives the steps, the commands (as `bash_command` pseudo tool calls), the screens and token
metrics; each `episode-N/debug.json` (LiteLLM's log of the episode's last call) gives that call's start,
duration, the raw reply (response id, finish reason, usage) and the full message history the model was sent.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

from orchestrator.atif import load_atif
from orchestrator.evidence import FormatError
from orchestrator.harnesses.base import NormalizeError
from orchestrator.harnesses.jsonl import loads_line
from orchestrator.harnesses.values import iso
from orchestrator.records import (
    Gap,
    Message,
    ModelCall,
    RequestedCall,
    Rollout,
    RolloutBuilder,
    outcome,
    token_stats,
    tool_record,
)

__all__ = ["normalize_logs"]

COMMAND = "bash_command"
COMPLETE = "mark_task_complete"
_EPISODE = re.compile(r"^episode-(\d+)$")
_ANALYSIS = re.compile(r"^Analysis: (.*?)(?:\nPlan: .*)?$", re.S)

_GAPS: list[Gap] = [
    {
        "code": "model_calls.failed_attempts_unrecorded",
        "detail": "Terminus retries a failed call (harbor's LiteLLM wrapper 3 times, inside Terminus's own 3) and "
        "each attempt's log overwrites the episode's debug.json; the trajectory records only the step that "
        "succeeded, so failed attempts and their errors are in no file",
        "labels": ["E1", "E7"],
    },
    {
        "code": "model_calls.status_code_inferred",
        "detail": "debug.json keeps no HTTP status: a call whose raw reply LiteLLM logged (post_api_call) is given 200",
    },
    {
        "code": "model_calls.times_assumed_utc",
        "detail": "debug.json times are naive local times; the container runs with TZ=UTC and they are read as UTC",
    },
    {
        "code": "tool_calls.ids_harness_minted",
        "detail": "the model gives Terminus commands, not tool calls: there is no call id on the wire, and "
        "call_<episode>_<n> is Terminus's own numbering",
        "labels": ["E5"],
    },
    {
        "code": "tool_calls.status_unrecorded",
        "detail": "commands are typed into one tmux pane: Terminus records no exit code or status per command",
        "labels": ["E5"],
    },
    {
        "code": "tool_calls.output_shared",
        "detail": "every command of a step shares one observation (the pane's new text), recorded as each one's output",
    },
    {
        "code": "outcome.error_unrecorded",
        "detail": "Terminus records no terminal error in its logs (the CLI prints it to stderr); an episode that "
        "did not end on a confirmed task_complete has outcome status unknown",
        "labels": ["E6"],
    },
]


def _read_json(path: Path) -> Any:
    try:
        return loads_line(path.read_text())
    except (OSError, ValueError):
        return None


def _utc(naive: Any) -> datetime | None:
    # The wall time as written, read as UTC (named as a gap): an offset written with it is not applied.
    if not isinstance(naive, str):
        return None
    try:
        return datetime.fromisoformat(naive).replace(tzinfo=UTC)
    except ValueError:
        return None


def _episodes(logs: Path) -> dict[int, dict[str, Any]]:
    found: dict[int, dict[str, Any]] = {}
    for d in logs.iterdir() if logs.is_dir() else []:
        m = _EPISODE.match(d.name)
        debug = _read_json(d / "debug.json") if m and d.is_dir() else None
        if m and isinstance(debug, dict):
            found[int(m.group(1))] = debug
    return found


def _reply(debug: dict[str, Any] | None) -> dict[str, Any] | None:
    raw = debug.get("original_response") if debug and debug.get("log_event_type") == "post_api_call" else None
    try:
        parsed = loads_line(raw) if isinstance(raw, str) and raw.startswith("{") else raw
    except (ValueError, RecursionError):  # a reply body that is no JSON: no reply read
        return None
    return parsed if isinstance(parsed, dict) else None


def _call(k: int, step: dict[str, Any], debug: dict[str, Any] | None, inv: str) -> ModelCall:
    reply = _reply(debug)
    start = _utc((debug or {}).get("api_call_start_time"))
    duration = (debug or {}).get("llm_api_duration_ms")
    end = start + timedelta(milliseconds=duration) if start and isinstance(duration, (int, float)) else None
    metrics = step.get("metrics") or {}
    usage = (reply or {}).get("usage") or {}
    details = usage.get("completion_tokens_details") or {}
    choices = (reply or {}).get("choices") or [{}]
    # Typed once built: values are as Terminus logged them (one of another type is for the schema checks to report).
    record: dict[str, Any] = {
        "model_call_id": f"episode-{k}",
        "started_at": iso(start),
        "completed_at": iso(end),
        "protocol": "chat" if (debug or {}).get("call_type") == "acompletion" else None,
        "status_code": 200 if reply is not None else None,
        "response_id": reply.get("id") if reply else None,
        "finish_reason": choices[0].get("finish_reason") if isinstance(choices[0], dict) else None,
        "error_category": None,
        "token_stats": token_stats(
            prompt=metrics.get("prompt_tokens"),
            completion=metrics.get("completion_tokens"),
            reasoning=details.get("reasoning_tokens") if isinstance(details, dict) else None,
            total=usage.get("total_tokens"),
            cached=metrics.get("cached_tokens"),
        ),
        "invocation_id": inv,
    }
    return cast(ModelCall, record)


def _conversation(last: dict[str, Any] | None) -> list[Message]:
    """The history the last call was sent, and the reply it got: what the model saw, as Terminus logged it."""
    if last is None:
        return []
    conv: list[Message] = [
        {"role": m["role"], "content": m.get("content") if isinstance(m.get("content"), str) else None}
        for m in last.get("messages") or []
        if isinstance(m, dict) and m.get("role") in ("system", "user", "assistant")
    ]
    reply = _reply(last)
    choices = (reply or {}).get("choices") or []
    message = choices[0].get("message") if choices and isinstance(choices[0], dict) else None
    if isinstance(message, dict):
        conv.append({"role": "assistant", "content": message.get("content")})
    return conv


def _typed(logs: Path, episodes: int) -> list[Message]:
    """The history from each episode's prompt.txt and response.txt, for when no call's debug.json was written:
    Terminus writes the prompt before the call and the response after it, so a call that never succeeded (every
    attempt failed, or the run was stopped) leaves its prompt and no reply."""
    conv: list[Message] = []
    for k in range(episodes + 1):
        for name, role in (("prompt.txt", "user"), ("response.txt", "assistant")):
            try:
                conv.append({"role": role, "content": (logs / f"episode-{k}" / name).read_text(errors="replace")})
            except OSError:
                return conv
    return conv


def _unparsed(step: dict[str, Any]) -> bool:
    """A reply Terminus could not parse: no pseudo calls, and the one observation is its "ERROR: " feedback (a
    screen it read always starts with its own header, never with that)."""
    results = (step.get("observation") or {}).get("results") or []
    content = results[0].get("content") if len(results) == 1 else None
    return not step.get("tool_calls") and isinstance(content, str) and content.startswith("ERROR: ")


def _confirmed(agent_steps: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The step that confirmed completion: Terminus ends on a second task_complete reply in a row, where a reply
    it could not parse neither confirms nor cancels a pending one (it only asks again)."""
    pending = False
    for step in agent_steps:
        if _unparsed(step):
            continue
        complete = any(tc["function_name"] == COMPLETE for tc in step.get("tool_calls") or [])
        if complete and pending:
            return step
        pending = complete
    return None


def normalize_logs(logs: Path, harness: str) -> Rollout:
    path = logs / "trajectory.json"
    if not path.is_file():
        raise NormalizeError(f"Terminus wrote no {path.name} in {logs.name}/")
    try:
        doc = load_atif(path)
    except FormatError as exc:
        raise NormalizeError(f"trajectory.json is not ATIF: {exc}") from None
    inv = doc.get("session_id") or doc.get("trajectory_id") or "terminus"
    debug = _episodes(logs)
    agent_steps = [s for s in doc["steps"] if s["source"] == "agent"]
    b = RolloutBuilder(harness, doc["agent"]["version"], _GAPS)
    for k, step in enumerate(agent_steps):
        cid = b.call(_call(k, step, debug.get(k), inv))
        b.step(k + 1, inv, step.get("timestamp"), [cid])
        results = (step.get("observation") or {}).get("results") or []
        shared = results[0].get("content") if len(results) == 1 and isinstance(results[0].get("content"), str) else None
        for tc in step.get("tool_calls") or []:
            if tc["function_name"] != COMMAND:
                continue
            requested: RequestedCall = {
                "tool_call_id": tc["tool_call_id"],
                "tool_name": COMMAND,
                "arguments": tc["arguments"],
            }
            b.tool(tool_record(requested, inv, k + 1, output=shared))
    result = outcome("unknown")
    confirmed = _confirmed(agent_steps)
    # Terminus returns on the confirming reply: a record going on after it does not show a run that ended there.
    if confirmed is not None and confirmed is agent_steps[-1]:
        message = confirmed.get("message")
        m = _ANALYSIS.match(message) if isinstance(message, str) else None
        result = outcome("completed", final_answer=m.group(1) if m else message)
    last = debug.get(len(agent_steps) - 1) if agent_steps else None
    b.invocation(inv, _conversation(last) or _typed(logs, len(agent_steps)))
    return b.build(
        result,
        rollout_id=doc.get("session_id"),
        extensions={"atif_schema_version": doc["schema_version"], "episodes_with_debug": sorted(debug)},
    )
