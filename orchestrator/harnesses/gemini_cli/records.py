"""What Gemini CLI's chat recording says of one session: its replies (steps), tool calls with their results, the
model-visible history and how the session ended, in the rollout's terms."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from orchestrator.harnesses.base import content_text
from orchestrator.harnesses.gemini_cli.session import ChatSession
from orchestrator.harnesses.values import count, nonempty
from orchestrator.records import Message, RequestedCall, TokenStats, ToolRecord, token_stats

__all__ = ["Reply", "call_id", "conversation", "gemini_tokens", "replies", "response_text", "tool_record"]

# Gemini CLI's shell tool reports a failed command's status in what it returns to the model ("Exit Code: 7"); its
# own description says the line is there only when the status is not 0.
_EXIT = re.compile(r"^Exit Code: (-?\d+)\s*$", re.MULTILINE)
SHELL_TOOL = "run_shell_command"


@dataclass(frozen=True)
class Reply:
    """One `gemini` message: a reply of the model, as recorded."""

    message: Mapping[str, Any]
    timestamp: str | None
    text: str | None
    calls: list[Mapping[str, Any]]
    tokens: TokenStats | None  # None: the message records no tokens


def call_id(recorded: Any, name: Any) -> str | None:
    """The provider's id of a tool call: Gemini CLI records `<tool>__<id the API sent>` (it prefixes the tool's name
    unless the id already starts with it); the prefix is taken off again."""
    if not isinstance(recorded, str):
        return None
    prefix = f"{name}__" if isinstance(name, str) else None
    return recorded.removeprefix(prefix) if prefix and recorded.startswith(prefix) else recorded


def response_text(response: Any) -> str | None:
    """A function response as the model reads it: its `output` text when that is all it holds, else the response as
    compact JSON (docs/formats.md: the same reading the proxy's witness makes of what crossed the wire)."""
    if isinstance(response, Mapping) and set(response) == {"output"} and isinstance(response["output"], str):
        return response["output"]
    if response is None:
        return None
    try:
        return json.dumps(response, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return None


def _text(content: Any) -> str | None:
    text = content_text(content)
    return text if text else None


def gemini_tokens(
    prompt: int | None, candidates: int | None, thoughts: int | None, total: int | None, cached: int | None
) -> TokenStats:
    """Google's counts in the rollout's convention: the thoughts, which Google counts apart from the candidates, are
    part of the completion (a sum over an unknown part is unknown)."""
    completion = candidates + thoughts if candidates is not None and thoughts is not None else None
    return token_stats(prompt=prompt, completion=completion, reasoning=thoughts, total=total, cached=cached)


def _tokens(raw: Any) -> TokenStats | None:
    """Gemini CLI's token record (the API's counts renamed); a count it wrote as 0 because the API sent none is
    read as written."""
    if not isinstance(raw, Mapping):
        return None
    counts = [count(raw.get(k)) for k in ("input", "output", "thoughts", "total", "cached")]
    return gemini_tokens(counts[0], counts[1], counts[2], counts[3], counts[4])


def replies(session: ChatSession) -> list[Reply]:
    out = []
    for m in session.messages:
        if m.get("type") != "gemini":
            continue
        calls = _calls(m)
        out.append(Reply(m, nonempty(m.get("timestamp")), _text(m.get("content")), calls, _tokens(m.get("tokens"))))
    return out


def _calls(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A reply's recorded tool calls; a `toolCalls` that is no list has none."""
    raw = message.get("toolCalls")
    return [c for c in raw if isinstance(c, Mapping)] if isinstance(raw, list) else []


def _result(call: Mapping[str, Any]) -> Mapping[str, Any] | None:
    parts = call.get("result")
    for part in parts if isinstance(parts, list) else []:
        answer = part.get("functionResponse") if isinstance(part, Mapping) else None
        if isinstance(answer, Mapping):
            return answer
    return None


def tool_record(call: Mapping[str, Any], invocation_id: str | None, step_no: int) -> ToolRecord:
    """A recorded tool call with what it returned: status from the command's exit code (the shell tool's
    `Exit Code:` line, absent when it was 0), or the call's own status for another tool."""
    answer = _result(call)
    output = response_text(answer.get("response")) if answer is not None else None
    state = call.get("status")
    exit_code: int | None = None
    status: str | None = None
    if call.get("name") == SHELL_TOOL and state == "success" and output is not None:
        found = _EXIT.search(output)
        exit_code = int(found.group(1)) if found else 0
        status = "succeeded" if exit_code == 0 else "failed"
    elif state in ("success", "error", "cancelled"):
        status = "succeeded" if state == "success" else "failed"
    return {
        "tool_call_id": call_id(call.get("id"), call.get("name")) or "",
        "tool_name": nonempty(call.get("name")) or "",
        "arguments": call.get("args"),
        "status": status,
        "exit_code": exit_code,
        "output": output,
        "invocation_id": invocation_id,
        "step_no": step_no,
    }


def conversation(session: ChatSession) -> list[Message]:
    """The history as the model saw it: user texts (its session context first), replies with their tool calls, and
    each function response as the tool's message. Notes, warnings and errors it shows the user are not sent."""
    conv: list[Message] = []
    for m in session.messages:
        kind, content = m.get("type"), m.get("content")
        if kind == "user":
            parts = content if isinstance(content, list) else []
            answers = [
                p["functionResponse"]
                for p in parts
                if isinstance(p, Mapping) and isinstance(p.get("functionResponse"), Mapping)
            ]
            for a in answers:
                conv.append(
                    {
                        "role": "tool",
                        "content": response_text(a.get("response")),
                        "tool_call_id": call_id(a.get("id"), a.get("name")),
                    }
                )
            if not answers:
                conv.append({"role": "user", "content": _text(content)})
        elif kind == "gemini":
            entry: Message = {"role": "assistant", "content": _text(content)}
            calls = _calls(m)
            if calls:
                entry["tool_calls"] = [
                    RequestedCall(
                        tool_call_id=call_id(c.get("id"), c.get("name")) or "",
                        tool_name=nonempty(c.get("name")) or "",
                        arguments=c.get("args"),
                    )
                    for c in calls
                ]
            conv.append(entry)
    return conv
