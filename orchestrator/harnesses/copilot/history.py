"""The model-visible history and the tool records, from Copilot CLI's session log (its main agent's events)."""

from __future__ import annotations

from typing import Any, cast

from orchestrator.harnesses.copilot.native import Event
from orchestrator.harnesses.values import integer, string
from orchestrator.records import Message, RequestedCall, RolloutBuilder, tool_record

__all__ = ["conversation", "requests", "tool_records"]


def requests(e: Event) -> list[RequestedCall]:
    """The tool calls an assistant message asked for, as Copilot logged them (a malformed entry kept as it is)."""
    found = e.data.get("toolRequests")
    calls: list[RequestedCall] = []
    for t in found if isinstance(found, list) else []:
        if isinstance(t, dict):
            entry = {"tool_call_id": t.get("toolCallId"), "tool_name": t.get("name"), "arguments": t.get("arguments")}
            calls.append(cast(RequestedCall, entry))
    return calls


def tool_records(b: RolloutBuilder, session: list[Event], sid: str, step_of_turn: dict[str, int]) -> None:
    """A tool record for each call the model requested whose execution Copilot logged as complete."""
    done = {
        e.data["toolCallId"]: e.data
        for e in session
        if e.type == "tool.execution_complete" and e.main and isinstance(e.data.get("toolCallId"), str)
    }
    seen: set[str] = set()
    for e in session:
        if e.type != "assistant.message" or not e.main:
            continue
        step = step_of_turn.get(str(e.data.get("turnId")))
        for requested in requests(e):
            cid = requested["tool_call_id"]
            result = done.get(cid) if isinstance(cid, str) else None
            if result is None or cid in seen:
                continue  # requested, never run (or requested twice, or without an id): no execution record
            seen.add(cid)
            shell = result.get("shellExecution")
            exit_code = integer(shell.get("exitCode")) if isinstance(shell, dict) else None
            success = result.get("success")
            # The command's exit code where the shell tool logged one: Copilot's `success` says the tool ran (it is
            # true for a command that exited 7), not that the command succeeded.
            status = (
                ("succeeded" if exit_code == 0 else "failed")
                if exit_code is not None
                else (("succeeded" if success else "failed") if isinstance(success, bool) else None)
            )
            b.tool(tool_record(requested, sid, step, status=status, exit_code=exit_code, output=_output(result)))


def _output(result: dict[str, Any]) -> str | None:
    # result.content is the text Copilot sent back to the model; a failed tool's text is its error's message.
    found = result.get("result")
    if isinstance(found, dict) and isinstance(found.get("content"), str):
        return str(found["content"])
    error = result.get("error")
    return string(error.get("message")) if isinstance(error, dict) else None


def conversation(session: list[Event]) -> list[Message]:
    """The model-visible history as the session logged it: prompts as sent, replies with their tool calls, results."""
    conv: list[Message] = []
    for e in session:
        if not e.main:
            continue
        if e.type == "user.message":
            conv.append({"role": "user", "content": e.text("transformedContent") or string(e.data.get("content"))})
        elif e.type == "assistant.message":
            turn: Message = {"role": "assistant", "content": e.text("content")}
            requested = requests(e)
            if requested:
                turn["tool_calls"] = requested
            conv.append(turn)
        elif e.type == "tool.execution_complete":
            conv.append({"role": "tool", "tool_call_id": string(e.data.get("toolCallId")), "content": _output(e.data)})
    return conv
