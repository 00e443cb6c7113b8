"""The evidence labels E1-E10 and what each check asks and catches, defined once for every reader (CLI, docs, reports).

A check's question is its docstring and its tier and labels its registration (`orchestrator/checks/model.py`); what
is added here is each label's meaning and each check's lie, the plain-language finding a failure of it makes about
the harness's self-report. Which checks carry a label is read from the registry, never listed by hand.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from orchestrator.checks import REGISTRY, Check

__all__ = ["LABELS", "LIES", "Explained", "Label", "checks_of", "explain", "label_names", "near"]


@dataclass(frozen=True)
class Label:
    id: str
    name: str
    meaning: str
    gym: str  # the NeMo Gym trajectory-evidence label it corresponds to, or "none"


LABELS: tuple[Label, ...] = (
    Label(
        "E1",
        "attempts",
        "each witnessed model attempt appears as one call with its outcome: 2xx with response id, or error "
        "status/category",
        "TE-1",
    ),
    Label("E2", "tokens", "token counts equal the scripted usage; omitted usage stays unknown (null)", "TE-2"),
    Label("E3", "steps", "each agent step recorded, numbered, timestamped, with its call references", "TE-3"),
    Label("E4", "history", "the model-visible history (tool results included, in order) can be rebuilt", "TE-4"),
    Label(
        "E5",
        "tools",
        "each executed tool call: id, name, arguments, status (from exit code), output, joined to its request",
        "TE-5",
    ),
    Label("E6", "outcome", "terminal outcome: final answer or error recorded, consistent with the witness", "TE-6"),
    Label("E7", "error payloads", "error payloads retained for failed attempts", "TE-7"),
    Label("E8", "ownership", "every attempt, failed ones included, owned by exactly one invocation/session", "TE-8"),
    Label(
        "E9",
        "step accounting",
        "every policy attempt belongs to exactly one step; retries stay attempts of that step",
        "TE-9",
    ),
    Label(
        "E10",
        "isolation",
        "no traffic except to the scripted provider (lookups and connects elsewhere are recorded)",
        "none",
    ),
)

# What a failing check says about the harness's self-report, in plain language: the lie the check catches.
LIES: dict[str, str] = {
    "rollout.format": "its record does not have the shape of a rollout at all",
    "calls.present": "no model call is recorded",
    "calls.identity": "model calls have no (unique) ids",
    "calls.protocol": "model calls do not name their provider protocol",
    "calls.timing": "model calls lack start/end times, or they are out of order",
    "calls.outcome": "a call is neither a success with response id and finish reason nor an error with a status",
    "tokens.fields": "token counts are malformed (negative or not numbers)",
    "invocations.identity": "no session/invocation owns the calls",
    "steps.numbering": "agent steps are missing or not numbered 1, 2, 3...",
    "tools.record": "tool executions are missing, or lack status or output",
    "outcome.fields": "how the run ended (final answer or error) is not recorded",
    "history.rebuildable": "the model-visible history cannot be rebuilt (tool results missing or out of order)",
    "invocations.parent": "invocation parent links do not resolve",
    "ownership.call_owner": "some model calls are not owned by exactly one invocation",
    "steps.call_refs": "steps do not reference the calls made for them",
    "steps.attempt_accounting": "some model calls (retries included) belong to no step, or to several",
    "tools.request_join": "tool records do not join to the tool calls that requested them",
    "gaps.none_voiding": "it does not report facts an evidence label needs (named gaps)",
    "witness.no_violations": "it broke the scripted conversation (requests out of script)",
    "witness.tools_executed": "scripted tool calls did not really run",
    "witness.results_seen": "tool outputs were not returned to the model",
    "witness.final_answer_sent": "it stopped before reaching the final answer",
    "attempts.multiset": "model attempts seen on the wire are missing from its record (often failed ones), or doubled",
    "calls.response_metadata": "finish reasons or protocols differ from what the provider sent",
    "tokens.match": "token counts differ from the usage the provider sent (or unknown counts are made up)",
    "errors.payload_retained": "error payloads of failed attempts are not kept",
    "steps.witness_attempts": "retries are not kept as attempts of the step they retried, or a tool is put in another "
    "step than the reply that requested it",
    "attempts.retry_identical": "a retry did not resend the identical request",
    "tools.witness_ids": "tool calls the model made are missing from its tool records (or extra ones appear)",
    "tools.witness_request": "tool names or arguments differ from what the model sent",
    "tools.witness_status": "tool status does not follow the command's exit code",
    "tools.witness_output": "recorded tool output differs from what the model was shown",
    "outcome.final_answer": "the recorded final answer differs from the one the provider sent",
    "outcome.terminal_error": "a run where every model call failed is not recorded as an error",
    "egress.none": "it tried to reach hosts other than the provider (telemetry, update checks)",
    "witness.faults_played": "the scenario's scripted faults were not all played: it was not exercised",
    "attempts.exchange": "a recorded call is not the exchange the wire shows (status, category, request or order)",
    "calls.witness_times": "recorded call times do not fit the times the requests crossed the wire",
    "history.witness_results": "the history's tool results differ from what the model saw on the wire",
    "history.witness_task": "the task its history records is not the one its first request gave the model",
    "history.witness_text": "assistant text in its history differs from what the provider's replies said",
    "steps.witness_times": "recorded step times fall outside the life of those steps on the wire",
    "calls.witness_response": "a recorded response body is not the reply the provider sent",
    "ownership.wire_sessions": "invocation ownership disagrees with the wire's session header or its conversations",
    "tokens.totals_match": "session or step token totals disagree with the calls or with the wire",
    "sources.agree": "its two records of the same run (a session log and OpenTelemetry) contradict each other",
    "compaction.recorded": "pushed to its context limit, it never compacted, or did not record the compaction",
    "error.propagated": "a terminal provider error does not reach its own final result (completed, or an error "
    "that names nothing), or its record stops before the call the wire ended on",
    "retry.waited": "it retried before the provider's Retry-After (or quota window) had passed",
    "retry.wait_recorded": "the wait it records before a retry is not the wait the wire shows",
    "tools.args_not_run": "it ran a tool call whose arguments arrived cut off (a guessed command), or its record "
    "hides or repairs that call",
    "history.harness_authored": "its history passes off turns it wrote itself as the model's, or hides them",
    "transport.parity": "its record of the same script differs between JSON and SSE replies",
    "process.exit_status": "its exit status says the opposite of how the episode ended (e.g. 0 after a terminal error)",
}


@dataclass(frozen=True)
class Explained:
    """One check as `checks explain` and docs/evidence.md show it."""

    check: Check
    question: str
    lie: str
    labels: tuple[Label, ...]


def label_names() -> dict[str, Label]:
    return {label.id: label for label in LABELS}


def checks_of(label: str) -> list[str]:
    """The ids of the checks carrying `label`, in registration order."""
    return [c.id for c in REGISTRY.values() if label in c.evidence]


def explain(check_id: str) -> Explained:
    """KeyError for an id no check has."""
    c = REGISTRY[check_id]
    names = label_names()
    return Explained(c, c.description, LIES[check_id], tuple(names[e] for e in c.evidence))


def near(check_id: str) -> list[str]:
    """Registered ids close to `check_id` (a typo, or the part before or after the dot)."""
    ids = list(REGISTRY)
    close = difflib.get_close_matches(check_id, ids, n=5, cutoff=0.6)
    part = [i for i in ids if check_id and (check_id in i or i.split(".")[-1] == check_id.split(".")[-1])]
    return list(dict.fromkeys(close + part))[:8]
