"""The probe-rollout/v1 document this agent writes about itself, as types, plus its atomic writer."""

from __future__ import annotations

import json
import os
import tempfile
from contextlib import suppress
from pathlib import Path
from typing import Literal, NotRequired, Required, TypedDict

SCHEMA_ID = "probe-rollout/v1"

OutcomeStatus = Literal["completed", "error", "unknown"]
ToolStatus = Literal["succeeded", "failed"]
ProtocolName = Literal["chat", "responses", "messages", "gemini"]
PROTOCOLS: tuple[ProtocolName, ...] = ("chat", "responses", "messages", "gemini")


class TokenStats(TypedDict):
    prompt: int | None
    completion: int | None
    reasoning: int | None
    total: int | None
    cached: int | None


class ModelCall(TypedDict):
    model_call_id: str
    started_at: str | None
    completed_at: str | None
    protocol: ProtocolName
    status_code: int | None
    response_id: str | None
    finish_reason: str | None
    error_category: str | None
    error: NotRequired[object]
    retry_delay_ms: NotRequired[float]
    token_stats: TokenStats
    invocation_id: str | None


class ConversationToolCall(TypedDict):
    tool_call_id: str
    tool_name: str
    arguments: object


class ConversationEntry(TypedDict, total=False):
    role: Required[Literal["system", "user", "assistant", "tool"]]
    content: str | None
    tool_calls: list[ConversationToolCall]
    tool_call_id: str
    origin: Literal["model", "harness"]


class Invocation(TypedDict):
    invocation_id: str
    parent_invocation_id: str | None
    model_call_refs: list[str]
    conversation: list[ConversationEntry]


class Step(TypedDict):
    step_no: int
    invocation_id: str | None
    timestamp: str | None
    model_call_refs: list[str]


class ToolCall(TypedDict):
    tool_call_id: str
    tool_name: str
    arguments: object
    status: ToolStatus | None
    exit_code: int | None
    output: str | None
    invocation_id: str | None
    step_no: int | None


class Compaction(TypedDict):
    invocation_id: str
    step_no: int
    model_call_refs: list[str]
    timestamp: str


class Outcome(TypedDict):
    final_answer: str | None
    status: OutcomeStatus
    failure_kind: str | None
    failure_reason: str | None


class Harness(TypedDict):
    name: str
    version: str | None


class Gap(TypedDict):
    code: str
    detail: str


class Rollout(TypedDict):
    schema: str
    harness: Harness
    task_id: str | None
    rollout_id: str | None
    model_calls: list[ModelCall]
    invocations: list[Invocation]
    steps: list[Step]
    tool_calls: list[ToolCall]
    outcome: Outcome
    gaps: list[Gap]
    compactions: NotRequired[list[Compaction]]
    extensions: NotRequired[dict[str, object]]


def unknown_tokens() -> TokenStats:
    """Token counts for a call whose reply carried no usage: unknown is null, never 0."""
    return {"prompt": None, "completion": None, "reasoning": None, "total": None, "cached": None}


def write_atomic(path: Path, rollout: Rollout) -> None:
    """Write `rollout` to `path` via a temporary file and a rename, so readers never see half a document."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # The temporary file lives in the target directory: os.replace is only atomic within one filesystem.
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp creates 0600; the orchestrator may read the file as another user from a mounted volume.
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(rollout, fh, indent=2, ensure_ascii=False)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
