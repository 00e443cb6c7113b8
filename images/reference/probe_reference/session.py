"""Everything the agent records about its own run while it runs, and the rollout built from it."""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass

from probe_reference import __version__
from probe_reference.attempts import Attempt, AttemptLog
from probe_reference.clock import utc_now
from probe_reference.replies import ModelReply, RequestedToolCall
from probe_reference.rollout import (
    SCHEMA_ID,
    Compaction,
    ConversationEntry,
    ModelCall,
    Outcome,
    OutcomeStatus,
    ProtocolName,
    Rollout,
    Step,
    ToolCall,
)
from probe_reference.tools import ToolResult, parse_arguments


@dataclass(frozen=True)
class StepStart:
    step_no: int
    timestamp: str


class Session:
    """One invocation's record: attempts, model-visible history, steps, tools, outcome.

    The history is kept here in rollout form, whatever the protocol; the dialog keeps the same history
    in its SDK's shape for sending.
    """

    def __init__(self, *, system_prompt: str, task: str, task_id: str | None, protocol: ProtocolName = "chat") -> None:
        self.task_id = task_id
        self.protocol: ProtocolName = protocol
        self.rollout_id = str(uuid.uuid4())
        self.invocation_id = f"inv-{uuid.uuid4()}"
        self.attempts = AttemptLog()
        self.conversation: list[ConversationEntry] = [
            {"role": "system", "content": system_prompt},
            {"role": "user", "content": task},
        ]
        self.steps: list[StepStart] = []
        self.tool_calls: list[ToolCall] = []
        self.compactions: list[Compaction] = []
        # Until the run says otherwise, the outcome is honestly unknown.
        self.outcome: Outcome = _outcome(None, "unknown", None, None)

    def begin_step(self, step_no: int) -> None:
        self.steps.append(StepStart(step_no, utc_now()))
        self.attempts.step_no = step_no

    def add_reply(self, reply: ModelReply) -> None:
        entry: ConversationEntry = {"role": "assistant", "content": reply.content}
        if reply.tool_calls:
            entry["tool_calls"] = [
                {
                    "tool_call_id": call.tool_call_id,
                    "tool_name": call.tool_name,
                    "arguments": parse_arguments(call.raw_arguments),
                }
                for call in reply.tool_calls
            ]
        self.conversation.append(entry)

    def add_own_turn(self, content: str, *, marked: bool) -> None:
        """An assistant turn the agent wrote itself, sent as the model's; `marked` records it as the agent's own."""
        entry: ConversationEntry = {"role": "assistant", "content": content}
        if marked:
            entry["origin"] = "harness"
        self.conversation.append(entry)

    def add_tool_result(self, step_no: int, call: RequestedToolCall, result: ToolResult) -> None:
        call_id, output = call.tool_call_id, result.output
        self.conversation.append({"role": "tool", "tool_call_id": call_id, "content": output})
        self.tool_calls.append(
            {
                "tool_call_id": call.tool_call_id,
                "tool_name": call.tool_name,
                "arguments": parse_arguments(call.raw_arguments),
                "status": result.status,
                "exit_code": result.exit_code,
                "output": result.output,
                "invocation_id": self.invocation_id,
                "step_no": step_no,
            }
        )

    def add_compaction(self, step_no: int, model_call_ids: list[str]) -> None:
        """The history was compacted during `step_no` by these calls: owned by this invocation, in no step."""
        self.compactions.append(
            {
                "invocation_id": self.invocation_id,
                "step_no": step_no,
                "model_call_refs": list(model_call_ids),
                "timestamp": utc_now(),
            }
        )

    def complete(self, final_answer: str | None) -> None:
        self.outcome = _outcome(final_answer, "completed", None, None)

    def fail(self, kind: str, reason: str) -> None:
        self.outcome = _outcome(None, "error", kind, reason)

    def to_rollout(self) -> Rollout:
        """The honest rollout: every attempt, owned by this invocation and by the step it was made for."""
        attempts = self.attempts.attempts
        helpers = {ref for c in self.compactions for ref in c["model_call_refs"]}
        steps: list[Step] = [
            {
                "step_no": step.step_no,
                "invocation_id": self.invocation_id,
                "timestamp": step.timestamp,
                # A compaction's calls are not the step's policy attempts: the compaction record names them.
                "model_call_refs": [
                    a.model_call_id for a in attempts if a.step_no == step.step_no and a.model_call_id not in helpers
                ],
            }
            for step in self.steps
        ]
        rollout: Rollout = {
            "schema": SCHEMA_ID,
            "harness": {"name": "reference", "version": __version__},
            "task_id": self.task_id,
            "rollout_id": self.rollout_id,
            "model_calls": [self._model_call(a) for a in attempts],
            "invocations": [
                {
                    "invocation_id": self.invocation_id,
                    "parent_invocation_id": None,
                    "model_call_refs": [a.model_call_id for a in attempts],
                    "conversation": self.conversation,
                }
            ],
            "steps": steps,
            "tool_calls": self.tool_calls,
            "outcome": self.outcome,
            "gaps": [],
        }
        if self.compactions:
            rollout["compactions"] = self.compactions
        # A deep copy, so mode transformations and later recording never alias each other.
        return copy.deepcopy(rollout)

    def _model_call(self, attempt: Attempt) -> ModelCall:
        call: ModelCall = {
            "model_call_id": attempt.model_call_id,
            "started_at": attempt.started_at,
            "completed_at": attempt.completed_at,
            "protocol": self.protocol,
            "status_code": attempt.status_code,
            # Response id and finish reason belong to delivered replies; a failed attempt has none.
            "response_id": None if attempt.error_category else attempt.response_id,
            "finish_reason": None if attempt.error_category else attempt.finish_reason,
            "error_category": attempt.error_category,
            "token_stats": attempt.token_stats,
            "invocation_id": self.invocation_id,
        }
        if attempt.error_category is not None:
            call["error"] = attempt.error
        if attempt.retry_delay_ms is not None:
            call["retry_delay_ms"] = attempt.retry_delay_ms
        return call


def _outcome(answer: str | None, status: OutcomeStatus, kind: str | None, reason: str | None) -> Outcome:
    return {"final_answer": answer, "status": status, "failure_kind": kind, "failure_reason": reason}
