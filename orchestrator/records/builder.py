"""The one rollout builder every normalizer uses: calls, steps, tool records, gaps and invocations, then `build()`.

The builder only collects and assembles: each normalizer still decides what its harness's logs say. Records are
passed as typed dict literals, so mypy checks their keys, and each keeps the key order its normalizer gives it
(that order is what rollout.json holds, byte for byte).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any, cast

from orchestrator.records.calls import ModelCall, TokenStats
from orchestrator.records.gaps import Gap, gap
from orchestrator.records.invocations import Invocation, Message, RequestedCall
from orchestrator.records.outcome import Outcome
from orchestrator.records.rollout import Compaction, Provenance, Rollout
from orchestrator.records.steps import Step
from orchestrator.records.tools import ToolRecord

__all__ = ["ROLLOUT_FORMAT", "RolloutBuilder", "exit_status", "tool_record"]

ROLLOUT_FORMAT = "probe-rollout/v1"


def exit_status(exit_code: int) -> str:
    """A tool call's status from its command's exit code."""
    return "succeeded" if exit_code == 0 else "failed"


def tool_record(
    requested: RequestedCall,
    invocation_id: str | None,
    step_no: int | None,
    *,
    status: str | None = None,
    exit_code: int | None = None,
    output: str | None = None,
) -> ToolRecord:
    """The record of an executed tool call, from the call the model requested (what it returned is filled later)."""
    return {
        "tool_call_id": requested["tool_call_id"],
        "tool_name": requested["tool_name"],
        "arguments": requested["arguments"],
        "status": status,
        "exit_code": exit_code,
        "output": output,
        "invocation_id": invocation_id,
        "step_no": step_no,
    }


class RolloutBuilder:
    """One rollout under construction. `gaps`: the structural gaps true of every run of the harness (copied)."""

    def __init__(self, harness: str, version: str | None, gaps: Iterable[Gap] = ()) -> None:
        self.harness = harness
        self.version = version
        self.calls: list[ModelCall] = []
        self.steps: list[Step] = []
        self.tools: list[ToolRecord] = []
        self.invocations: list[Invocation] = []
        self.gaps: list[Gap] = copy.deepcopy(list(gaps))  # the rollout is the caller's to change
        self.pending: dict[str, ToolRecord] = {}  # tool_call_id -> its record, awaiting its result

    def next_call_id(self) -> str:
        """The id of the next call, for a harness that numbers none: call-1, call-2, ..."""
        return f"call-{len(self.calls) + 1}"

    def call(self, call: ModelCall) -> str:
        """Record one model attempt; returns its id."""
        self.calls.append(call)
        return call["model_call_id"]

    def step(self, step_no: int, invocation_id: str | None, timestamp: str | None, refs: list[str]) -> Step:
        step: Step = {
            "step_no": step_no,
            "invocation_id": invocation_id,
            "timestamp": timestamp,
            "model_call_refs": refs,
        }
        self.steps.append(step)
        return step

    def tool(self, record: ToolRecord, *, awaits_result: bool = False) -> ToolRecord:
        """Record one executed tool call. `awaits_result`: its result comes later (`result()`); one never given is
        named by `unrecorded_results()`."""
        self.tools.append(record)
        if awaits_result and record["tool_call_id"]:
            self.pending[record["tool_call_id"]] = record
        return record

    def result(self, tool_call_id: str | None) -> ToolRecord | None:
        """The awaiting record a tool result belongs to, taken off the waiting list (None: no such record)."""
        return self.pending.pop(tool_call_id, None) if tool_call_id else None

    def unrecorded_results(self) -> None:
        """Name each tool call whose result never came."""
        for cid in self.pending:
            self.gap("tool_calls.result_unrecorded", f"no tool message records the result of {cid}", ["E5"])

    def gap(self, code: str, detail: str, labels: list[str] | None = None) -> None:
        self.gaps.append(gap(code, detail, labels))

    def invocation(
        self,
        invocation_id: str,
        conversation: list[Message],
        *,
        parent: str | None = None,
        refs: list[str] | None = None,
        token_totals: TokenStats | None = None,
    ) -> Invocation:
        """Record one invocation; `refs` default to every call recorded so far."""
        inv: Invocation = {
            "invocation_id": invocation_id,
            "parent_invocation_id": parent,
            "model_call_refs": [c["model_call_id"] for c in self.calls] if refs is None else refs,
            "conversation": conversation,
        }
        if token_totals is not None:
            inv["token_totals"] = token_totals
        self.invocations.append(inv)
        return inv

    def build(
        self,
        outcome: Outcome,
        *,
        task_id: str | None = None,
        rollout_id: str | None = None,
        provenance: Provenance | None = None,
        compactions: list[Compaction] | None = None,
        extensions: dict[str, Any] | None = None,
    ) -> Rollout:
        # Built as a plain dict: the optional keys sit between required ones (compactions and provenance before gaps).
        rollout: dict[str, Any] = {
            "schema": ROLLOUT_FORMAT,
            "harness": {"name": self.harness, "version": self.version},
            "task_id": task_id,
            "rollout_id": rollout_id,
            "model_calls": self.calls,
            "invocations": self.invocations,
            "steps": self.steps,
            "tool_calls": self.tools,
            "outcome": outcome,
        }
        if compactions is not None:
            rollout["compactions"] = compactions
        if provenance is not None:
            rollout["provenance"] = provenance
        rollout["gaps"] = self.gaps
        if extensions is not None:
            rollout["extensions"] = extensions
        return cast(Rollout, rollout)
