"""Which requests continue which conversation on the wire: a request whose history carries a tool result continues
the conversation of the reply that issued that tool call, whatever header (or none) the harness sends."""

from __future__ import annotations

from typing import Any

from orchestrator.checks.evidence import Evidence, withheld

__all__ = ["ownership_breaks", "result_ids"]


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [x for x in value if isinstance(x, dict)] if isinstance(value, list) else []


def result_ids(request: Any) -> set[str]:
    """Tool-call ids whose results a request's history carries, in any of the three protocols."""
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
