"""An executed tool call as the harness recorded it (probe-rollout/v1 `tool_calls[]`)."""
# No `from __future__ import annotations`: TypedDict reads NotRequired/Required from evaluated annotations.

from typing import Any, TypedDict

__all__ = ["ToolRecord"]


class ToolRecord(TypedDict):
    tool_call_id: str
    tool_name: str
    arguments: Any
    status: str | None  # succeeded | failed | None (not reported)
    exit_code: int | None
    output: str | None
    invocation_id: str | None
    step_no: int | None
