"""What a recorded history claims about the conversations on the wire: which calls continue which conversation (a
request carrying a tool result continues the reply that issued that call), and which tool calls the replies issued."""

from __future__ import annotations

import json
from typing import Any

from orchestrator.checks.evidence import Evidence, withheld

__all__ = ["history_call_mismatches", "ownership_breaks", "result_ids", "text_of"]


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [x for x in value if isinstance(x, dict)] if isinstance(value, list) else []


def result_ids(request: Any) -> set[str]:
    """Tool-call ids whose results a request's history carries, in any of the four protocols."""
    if not isinstance(request, dict):
        return set()
    ids: set[str] = set()
    for item in _dicts(request.get("messages")) + _dicts(request.get("input")):
        if item.get("role") == "tool" and isinstance(item.get("tool_call_id"), str):
            ids.add(item["tool_call_id"])  # Chat Completions
        if item.get("type") == "function_call_output" and isinstance(item.get("call_id"), str):
            ids.add(item["call_id"])  # Responses
        for block in _dicts(item.get("content")):
            if block.get("type") == "tool_result" and isinstance(block.get("tool_use_id"), str):
                ids.add(block["tool_use_id"])  # Messages
    for content in _dicts(request.get("contents")):
        for part in _dicts(content.get("parts")):
            # Gemini: the API takes the proto name of a field as well as its JSON name.
            answer = part.get("functionResponse", part.get("function_response"))
            if isinstance(answer, dict) and isinstance(answer.get("id"), str):
                ids.add(answer["id"])
    return ids


def ownership_breaks(ev: Evidence, pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> list[str]:
    """Each model request whose history carries the result of a tool call that an earlier reply issued, where the
    two attempts' recorded calls are owned by different invocations: one conversation split between owners.

    Only the scripted (model) attempts are read on both sides: the proxy issues every tool-call id in a scripted
    reply, so an id carried back names that reply and no other; a side request (a summarization a harness may
    record as another invocation's) is left out. A conversation begun afresh (a sub-agent's, or one after a
    compaction that kept no result) continues nothing, so it is never judged here."""
    owner = {id(a): c for c, a in pairs}
    issued: dict[str, dict[str, Any]] = {}
    reasons: list[str] = []
    for a in ev.w.attempts("model"):
        call = owner.get(id(a))
        if call is not None and not withheld(a, "request"):
            parents: dict[int, tuple[dict[str, Any], str]] = {}
            for tool_call_id in sorted(result_ids(a.get("request"))):
                parent = issued.get(tool_call_id)
                if parent is not None and id(parent) not in parents:
                    parents[id(parent)] = (parent, tool_call_id)
            for parent, tool_call_id in parents.values():
                before = owner.get(id(parent))
                if before is not None and before.get("invocation_id") != call.get("invocation_id"):
                    reasons.append(
                        f"{call.get('model_call_id')}: its request ({a['attempt_id']}) carries the result of "
                        f"{tool_call_id}, which {parent['attempt_id']} issued to {before.get('model_call_id')} of "
                        f"invocation {before.get('invocation_id')!r}, but it is owned by invocation "
                        f"{call.get('invocation_id')!r}"
                    )
        ids = a.get("tool_call_ids")
        for tool_call_id in ids if isinstance(ids, list) else []:
            if isinstance(tool_call_id, str):
                issued.setdefault(tool_call_id, a)
    return reasons


def parsed_arguments(value: Any) -> Any:
    """Tool-call arguments as recorded: JSON text read as its value, anything else as it is."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def history_call_mismatches(ev: Evidence) -> list[str]:
    """Each tool call in an invocation's recorded history that the wire issued (joined by id), whose arguments are
    not the ones the scripted reply sent: the history says the model asked for something it did not. (Its name is
    held to the tool record by tools.request_join, and the record's to the wire by tools.witness_request.)"""
    sent = {c["tool_call_id"]: c for c in ev.w.tool_calls()}
    reasons: list[str] = []
    if not sent:
        return reasons
    invocations = ev.r.get("invocations")
    for inv in _dicts(invocations):
        for n, m in enumerate(_dicts(inv.get("conversation"))):
            if m.get("role") != "assistant":
                continue
            for tc in _dicts(m.get("tool_calls")):
                call = sent.get(tc.get("tool_call_id"))
                if call is None:
                    continue  # a call the wire never issued (a harness's own prefill) is not the wire's to judge
                if parsed_arguments(tc.get("arguments")) != call.get("arguments"):
                    reasons.append(
                        f"invocation {inv.get('invocation_id')}: conversation[{n}] gives {call['tool_call_id']} the "
                        f"arguments {tc.get('arguments')!r}, sent {call.get('arguments')!r}"
                    )
    return reasons


def text_of(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict)]
        if parts and all(isinstance(p, str) for p in parts):
            return "".join(parts)  # type: ignore[arg-type]
    return None
