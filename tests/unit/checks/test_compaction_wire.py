"""Compaction as the witness shows it: a summarization side request after a tool call was issued counts, even
when no result was ever sent back as a tool message (OpenCode summarizes first, then continues from the summary)."""

from __future__ import annotations

from typing import Any

from orchestrator.checks.compaction import witnessed_compactions
from orchestrator.checks.evidence import Witness

PATH = "/v1/chat/completions"


def attempt(n: int, kind: str, messages: list[dict[str, Any]], tool_call_ids: list[str]) -> dict[str, Any]:
    return {
        "event": "attempt",
        "attempt_id": f"attempt-{n}",
        "kind": kind,
        "method": "POST",
        "path": PATH,
        "request": {"model": "probe-model", "messages": messages},
        "tool_call_ids": tool_call_ids,
    }


USER = {"role": "user", "content": "Run the shell commands you are asked to run."}
SUMMARY_ASK = {"role": "user", "content": "Create a new anchored summary from the conversation history."}
TITLE_ASK = {"role": "user", "content": "Generate a short title for this session."}


def test_a_summarization_after_an_issued_call_is_compaction_without_any_result_sent() -> None:
    w = Witness([attempt(0, "model", [USER], ["call_1"]), attempt(1, "auxiliary", [SUMMARY_ASK], [])])
    [found] = witnessed_compactions(w)
    assert found.summarization and found.attempt["attempt_id"] == "attempt-1"


def test_a_summarization_before_any_call_or_a_title_request_is_not() -> None:
    before = Witness([attempt(0, "auxiliary", [SUMMARY_ASK], []), attempt(1, "model", [USER], ["call_1"])])
    assert witnessed_compactions(before) == []
    title = Witness([attempt(0, "model", [USER], ["call_1"]), attempt(1, "auxiliary", [TITLE_ASK], [])])
    assert witnessed_compactions(title) == []
