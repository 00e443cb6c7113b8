"""The context-compaction play: scripted usage near the model's context window, and that window where asked."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from proxy_addons.protocol import ModelRequest, Usage, usage_for_attempt
from proxy_addons.scenario import Scenario

# Prompt usage reported on every scripted reply, as a share of the window: past every compaction threshold
# harnesses use (Claude Code ~92 %, Codex 90 %, Hermes 50-85 %), still short of an overflow.
NEAR_WINDOW = 0.97
SUMMARY_WORDS = ("summar", "compact", "condense")
# A request for a summary of the conversation: "a detailed summary of the conversation so far" (Copilot CLI),
# "a concise summary of the conversation so far" (Stirrup), "summarize the conversation".
SUMMARY_REQUEST = re.compile(r"\bsummar(?:y|i[sz]e)\b(?:\W+\w+){0,3}?\W+conversation\b", re.IGNORECASE)


def reply_usage(scenario: Scenario, model_attempt: int, compacted: bool = False) -> Usage | None:
    """The usage a scripted reply carries: none, the plain per-attempt usage, or that usage near the window
    until the harness has compacted (after that its history is short again; staying near the window would push
    a harness that did compact into compacting after every reply, the final one included).

    Near the window the per-attempt offsets stay, so every count still joins to exactly one attempt.
    """
    if not scenario.usage:
        return None
    plain = usage_for_attempt(model_attempt)
    if scenario.context_window is None or compacted:
        return plain
    near = int(scenario.context_window * NEAR_WINDOW)
    return replace(plain, prompt=near + plain.prompt)


def window_fields(scenario: Scenario, anthropic: bool) -> dict[str, Any]:
    """Context-window fields for the model object, under the names harnesses read (none without a window)."""
    window = scenario.context_window
    if window is None:
        return {}
    if anthropic:
        return {"max_input_tokens": window}
    # OpenRouter's `context_length`, vLLM's `max_model_len`, and the plain `context_window` some clients read.
    return {"context_length": window, "context_window": window, "max_model_len": window}


def is_summarization(scenario: Scenario, body: Any) -> bool:
    """Whether a tool-less side request asks for a summary of the conversation (compaction scenarios only).
    Harnesses also send side requests that are not compaction (titles, topic checks); every summarization
    prompt seen names one of these words. orchestrator/checks/compaction.py reads the witness the same way."""
    if scenario.context_window is None:
        return False
    return _names_summary(json.dumps(body, ensure_ascii=False))


def asks_for_summary(scenario: Scenario, request: ModelRequest) -> bool:
    """Whether a request that may advertise tools is a summarization side request: its history closes, after the
    model's turns, with a user message asking for a summary of the conversation (compaction scenarios only).
    Copilot CLI and Stirrup send theirs with every tool still advertised; a loop message that only mentions
    summarizing (NOOA's context notes: "summarize older work") is no such request."""
    prompt = request.closing_prompt
    return scenario.context_window is not None and prompt is not None and bool(SUMMARY_REQUEST.search(prompt))


def _names_summary(text: str) -> bool:
    lowered = text.lower()
    return any(word in lowered for word in SUMMARY_WORDS)


def may_drop(scenario: Scenario, output_seen: str | None, summarized: bool = False) -> bool:
    """Whether a request may leave out a tool result: only one the model already saw, in a tool result or in a
    summarization request made after the command ran, and only where the script pushes the harness to compact
    (elsewhere every issued call's result must stay in the history)."""
    return scenario.context_window is not None and (output_seen is not None or summarized)
