"""Cline's `--json` event stream, read as its agent loop recorded it: iterations (one model call each), the tool
calls each ran, and how the run ended."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from orchestrator.harnesses.values import integer, string

__all__ = ["Iteration", "Timeline", "ToolRun", "read_timeline"]


@dataclass
class ToolRun:
    """One tool call of an iteration: `content_start` (what the model asked for), then `content_end` (its result)."""

    call_id: str
    name: str | None
    arguments: Any
    output: Any = None  # content_end.output as recorded (run_commands: a list of {query, result, success, error})
    ended: bool = False


@dataclass
class Iteration:
    """One turn of Cline's agent loop: it starts, sends one model request and records its reply or its failure."""

    number: int
    started_at: str | None
    usage: dict[str, Any] | None = None  # the `usage` event of the reply
    usage_at: str | None = None
    reply_at: str | None = None  # the first recorded part of the reply (text end, tool start), when no usage came
    text: str | None = None  # the reply's text as its last `content_end` gave it
    tools: list[ToolRun] = field(default_factory=list)
    error: dict[str, Any] | None = None  # the run's terminal `error` event, when it came in this iteration
    error_at: str | None = None
    ended_at: str | None = None

    @property
    def replied(self) -> bool:
        """Cline recorded a reply (usage, text or a tool call), not only a start."""
        return self.usage is not None or self.text is not None or bool(self.tools)


@dataclass
class Timeline:
    iterations: list[Iteration] = field(default_factory=list)
    result: dict[str, Any] | None = None  # the closing `run_result` line
    failure: dict[str, Any] | None = None  # a terminal `error` event outside any iteration
    mistakes: list[str] = field(default_factory=list)  # recoverable `error` events (Cline's "mistakes")
    task_id: str | None = None  # the lead agent's conversation id (hook events' taskId)


def read_timeline(events: list[dict[str, Any]]) -> Timeline:
    t = Timeline()
    current: Iteration | None = None
    for e in events:
        kind = e.get("type")
        at = string(e.get("ts"))
        if kind == "hook_event" and t.task_id is None and e.get("parentAgentId") is None:
            t.task_id = string(e.get("taskId"))
        elif kind == "run_result":
            t.result = e
        elif kind == "agent_event" and isinstance(e.get("event"), dict):
            current = _agent_event(t, current, e["event"], at)
    return t


def _agent_event(t: Timeline, current: Iteration | None, ev: dict[str, Any], at: str | None) -> Iteration | None:
    kind = ev.get("type")
    if kind == "iteration_start":
        number = integer(ev.get("iteration"))
        current = Iteration(number if number is not None else len(t.iterations) + 1, at)
        t.iterations.append(current)
        return current
    if kind == "error":
        if ev.get("recoverable") is True:
            t.mistakes.append(_message(ev) or "")
        elif current is not None and integer(ev.get("iteration")) in (None, current.number):
            current.error, current.error_at = ev, at
        else:
            t.failure = ev
        return current
    if current is None:
        return None
    if kind == "iteration_end":
        current.ended_at = at
    elif kind == "usage":
        current.usage, current.usage_at = ev, at
    elif kind == "content_end" and ev.get("contentType") == "text":
        current.text = string(ev.get("text"))
        current.reply_at = current.reply_at or at
    elif kind == "content_start" and ev.get("contentType") == "tool":
        call_id = string(ev.get("toolCallId"))
        if call_id is not None and all(r.call_id != call_id for r in current.tools):
            current.tools.append(ToolRun(call_id, string(ev.get("toolName")), ev.get("input")))
            current.reply_at = current.reply_at or at
    elif kind == "content_end" and ev.get("contentType") == "tool":
        run = next((r for r in current.tools if r.call_id == ev.get("toolCallId")), None)
        if run is not None:
            run.output, run.ended = ev.get("output"), True
    return current


def _message(ev: dict[str, Any]) -> str | None:
    error = ev.get("error")
    return string(error.get("message")) if isinstance(error, dict) else string(error)
