"""Honest context compaction: near the model's context window, summarize the older history and say so."""

from __future__ import annotations

from typing import Protocol

import httpx

from probe_reference.progress import say
from probe_reference.replies import ModelReply

# Compact once the last reply's prompt filled this share of the window (Codex and Claude Code use ~90 %).
THRESHOLD = 0.9
SUMMARY_REQUEST = (
    "Summarize the conversation so far for your own later use: the task, the commands you ran and what they "
    "printed. Reply with the summary only."
)
SUMMARY_PREFIX = "Summary of the earlier conversation (compacted): "
# The window under the names providers give it: OpenAI-compatible servers, Anthropic, Gemini (`Model.inputTokenLimit`).
_WINDOW_FIELDS = ("context_window", "context_length", "max_model_len", "max_input_tokens", "inputTokenLimit")


class Compactable(Protocol):
    """A dialog whose older history can be summarized and replaced by the summary."""

    def compactable(self) -> bool:
        """Whether anything lies before the last exchange (the part that compaction replaces)."""
        ...

    def summarize(self) -> ModelReply:
        """Ask the model, without tools, to summarize the history; raises ReplyFailed when no reply came."""
        ...

    def replace_older(self, summary: str) -> None:
        """Keep the system prompt, the task and the last exchange; put the summary in place of the rest."""
        ...

    def model_lookup(self, model: str, api_key: str | None) -> tuple[str, dict[str, str]]:
        """The URL and headers of the provider's description of `model` (where its window is)."""
        ...


def context_window(lookup: tuple[str, dict[str, str]], timeout_s: float | None) -> int | None:
    """The window the provider reports at `lookup` (a Compactable's model_lookup), or None when it reports none.

    Asked outside the SDK's observed client on purpose: a models lookup is not a model call.
    """
    url, headers = lookup
    try:
        response = httpx.get(url, headers=headers, timeout=timeout_s or 10)
        body = response.json() if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError) as exc:
        say(f"context window unknown: {type(exc).__name__}: {exc}")
        return None
    if isinstance(body, dict):
        for name in _WINDOW_FIELDS:
            value = body.get(name)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
    return None


def due(prompt_tokens: int | None, window: int | None) -> bool:
    """Compaction is due when the last prompt filled the window past the threshold (unknown: never)."""
    return prompt_tokens is not None and window is not None and prompt_tokens >= THRESHOLD * window
