"""An invocation (one agent session or sub-agent) with the conversation it saw (probe-rollout/v1 `invocations[]`)."""
# No `from __future__ import annotations`: TypedDict reads NotRequired/Required from evaluated annotations.

from typing import Any, NotRequired, Required, TypedDict

from orchestrator.records.calls import TokenStats

__all__ = ["Invocation", "Message", "RequestedCall"]


class RequestedCall(TypedDict):
    """A tool call as the model requested it, inside an assistant message."""

    tool_call_id: str
    tool_name: str
    arguments: Any


class Message(TypedDict, total=False):
    """One entry of the model-visible history; only `role` is required (the schema admits further keys)."""

    role: Required[str]
    content: str | None
    tool_calls: list[RequestedCall]
    tool_call_id: str | None
    # `harness` for an assistant turn the harness wrote itself, as its own record marks it.
    origin: str


class Invocation(TypedDict):
    invocation_id: str
    parent_invocation_id: str | None
    model_call_refs: list[str]
    token_totals: NotRequired[TokenStats]
    conversation: list[Message]
