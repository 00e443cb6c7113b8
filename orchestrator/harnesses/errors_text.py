"""The transport failure a Node provider SDK's error text names (undici and the OpenAI/Anthropic SDKs' wording)."""

from __future__ import annotations

import re

__all__ = ["transport_category"]

_CATEGORIES = (
    (re.compile(r"timed? ?out|timeout", re.I), "timeout"),
    (re.compile(r"terminated|other side closed|ended without|premature close|socket hang up", re.I), "stream_cut"),
    (re.compile(r"connect|fetch failed|network|ECONNRESET|EPIPE", re.I), "connection"),
)


def transport_category(text: str | None) -> str | None:
    """timeout, stream_cut or connection when the text names one (first match in that order), else None."""
    for pattern, name in _CATEGORIES:
        if pattern.search(text or ""):
            return name
    return None
