"""What Gemini CLI's telemetry says of the facts the rollout read from its chat recording (its tool calls, the
answer, its session's token totals), as `provenance.corroboration` entries and facts of its own."""

from __future__ import annotations

from typing import Any

from orchestrator.harnesses.gemini_cli.records import call_id, gemini_tokens
from orchestrator.harnesses.gemini_cli.telemetry import OtelAttempt
from orchestrator.harnesses.jsonl import loads_line
from orchestrator.harnesses.otel import Telemetry, ToolExecution, metric_totals, tool_executions
from orchestrator.records import Corroboration, Outcome, RolloutBuilder, TokenStats

__all__ = ["Corroborator", "answer_of", "token_totals"]

TOKEN_METRIC = "gemini_cli.token.usage"


def answer_of(response_text: str | None) -> str | None:
    """The text of a reply from the stream events Gemini CLI's telemetry keeps of it (`response_text`: the
    events as a JSON array), its thoughts left out; None when it kept none."""
    if response_text is None:
        return None
    try:
        events = loads_line(response_text)
    except (ValueError, RecursionError):
        return None
    texts: list[str] = []
    for event in events if isinstance(events, list) else [events]:
        candidates = event.get("candidates") if isinstance(event, dict) else None
        first: dict[str, Any] = {}
        if isinstance(candidates, list) and candidates and isinstance(candidates[0], dict):
            first = candidates[0]
        content = first.get("content")
        if not isinstance(content, dict):
            continue
        for part in content.get("parts") or []:
            if isinstance(part, dict) and isinstance(part.get("text"), str) and not part.get("thought"):
                texts.append(part["text"])
    return "".join(texts)


def token_totals(telemetry: Telemetry) -> TokenStats | None:
    """The session's totals from Gemini CLI's cumulative token metric (types input, output, thought, cache, tool)
    in the rollout's convention; None when no export carries it. It counts no total of its own."""
    by_type = metric_totals(telemetry, TOKEN_METRIC, "type")
    if by_type is None:
        return None
    return gemini_tokens(
        by_type.get("input"), by_type.get("output"), by_type.get("thought"), None, by_type.get("cache")
    )


class Corroborator:
    """Collects what the second source says of the rollout's facts."""

    def __init__(self) -> None:
        self.entries: list[Corroboration] = []

    def add(self, fact: str, source: str, value: Any) -> None:
        self.entries.append({"fact": fact, "source": source, "value": value})

    def telemetry(self, b: RolloutBuilder, telemetry: Telemetry, last: OtelAttempt | None, result: Outcome) -> None:
        """`last`: the telemetry's attempt of the last reply (the answer, when the run completed)."""
        self._tools(b, telemetry)
        said = answer_of(last.response_text) if last is not None and last.ok else None
        if result["final_answer"] is not None and said is not None:
            self.add("/outcome/final_answer", "otel", said)

    def _tools(self, b: RolloutBuilder, telemetry: Telemetry) -> None:
        """Each tool call span of the telemetry against the tool record with its id: the same tool; a span with no
        record, and a record with no span, are each a fact one source has and the other lacks."""
        spans: dict[str, ToolExecution] = {}
        for execution in tool_executions(telemetry):
            decoded = call_id(execution.call_id, execution.name)
            if decoded is not None:
                spans[decoded] = execution
        recorded = {t["tool_call_id"] for t in b.tools}
        for n, tool in enumerate(b.tools):
            found = spans.get(tool["tool_call_id"])
            if found is None:
                self.add(f"/tool_calls/{n}/tool_call_id", "otel", None)
            else:
                self.add(f"/tool_calls/{n}/tool_name", "otel", found.name)
        extra = [cid for cid in spans if cid not in recorded]
        for n, cid in enumerate(extra, start=len(b.tools)):
            self.add(f"/tool_calls/{n}", "otel", {"tool_call_id": cid, "tool_name": spans[cid].name})
