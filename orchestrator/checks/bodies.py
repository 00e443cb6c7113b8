"""What request and reply bodies on the wire say, read alike in each protocol: a request's first user message, a
reply's text and the tool-call ids it issued, and whether a recorded body is the one the proxy sent."""

from __future__ import annotations

import json
from typing import Any

from orchestrator.evidence.jsonread import JsonFault, loads

__all__ = ["body_difference", "first_user_message", "reply_call_ids", "reply_text"]


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [x for x in value if isinstance(x, dict)] if isinstance(value, list) else []


def _parts(content: Any) -> list[str] | None:
    """The text of a message's content, one entry per text part (a string is one part); None when it holds none."""
    if isinstance(content, str):
        return [content]
    # Chat `text`, Responses `input_text`/`output_text`, Messages `text` parts; images, tool results and the like
    # carry no text of the message.
    texts = [
        p["text"]
        for p in _dicts(content)
        if p.get("type") in ("text", "input_text", "output_text") and isinstance(p.get("text"), str)
    ]
    return texts or None


def first_user_message(request: Any) -> list[str] | None:
    """The text parts of a request's first user message (Chat and Messages `messages`, Responses `input`, which
    may be the message itself as a string, Gemini `contents`); None when the request holds none."""
    if not isinstance(request, dict):
        return None
    if "contents" in request and "messages" not in request and "input" not in request:
        # Gemini: a content without a role is the user's; its text parts are the message (function responses and
        # other parts carry none of it).
        for c in _dicts(request.get("contents")):
            if c.get("role", "user") == "user":
                return _gemini_texts(c) or None
        return None
    items = request.get("messages")
    if items is None:
        items = request.get("input")
        if isinstance(items, str):
            return [items]
    for m in _dicts(items):
        if m.get("role") == "user":
            return _parts(m.get("content"))
    return None


def _gemini_texts(content: Any) -> list[str]:
    """The text parts of a Gemini content, a thought (reasoning) part left out as the other protocols' are."""
    parts = _dicts(content.get("parts")) if isinstance(content, dict) else []
    return [p["text"] for p in parts if isinstance(p.get("text"), str) and not p.get("thought")]


def _gemini_parts(response: dict[str, Any]) -> list[dict[str, Any]]:
    candidates = _dicts(response.get("candidates"))
    content = candidates[0].get("content") if candidates else None
    return _dicts(content.get("parts")) if isinstance(content, dict) else []


def _chat_message(response: dict[str, Any]) -> dict[str, Any]:
    choices = _dicts(response.get("choices"))
    message = choices[0].get("message") if choices else None
    return message if isinstance(message, dict) else {}


def reply_text(response: Any, protocol: Any) -> str:
    """The assistant text a reply carried ("" for none): Chat's message content, Responses' output messages,
    Messages' text blocks, Gemini's first candidate's text parts."""
    if not isinstance(response, dict):
        return ""
    if protocol == "chat":
        parts = _parts(_chat_message(response).get("content"))
    elif protocol == "responses":
        messages = [item for item in _dicts(response.get("output")) if item.get("type") == "message"]
        parts = [t for item in messages for t in _parts(item.get("content")) or []]
    elif protocol == "messages":
        parts = _parts(response.get("content"))
    elif protocol == "gemini":
        parts = _gemini_texts({"parts": _gemini_parts(response)})
    else:
        parts = None
    return "".join(parts or [])


def reply_call_ids(response: Any, protocol: Any) -> list[str]:
    """The ids of the tool calls a reply's body issued, in order (any tool, the shell's or a harness's own finish
    or result tool alike)."""
    if not isinstance(response, dict):
        return []
    if protocol == "chat":
        ids = [tc.get("id") for tc in _dicts(_chat_message(response).get("tool_calls"))]
    elif protocol == "responses":
        ids = [item.get("call_id") for item in _dicts(response.get("output")) if item.get("type") == "function_call"]
    elif protocol == "messages":
        ids = [b.get("id") for b in _dicts(response.get("content")) if b.get("type") == "tool_use"]
    elif protocol == "gemini":
        calls = [p.get("functionCall", p.get("function_call")) for p in _gemini_parts(response)]
        ids = [c.get("id") for c in calls if isinstance(c, dict)]
    else:
        ids = []
    return [i for i in ids if isinstance(i, str)]


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, dict | list) and not value)


def body_difference(recorded: Any, sent: Any, at: str = "$") -> str | None:
    """Where a recorded body first differs from the one sent, or None when they are the same body.

    The same body, honestly written: keys in any order, a number in any form (1, 1.0), and a key the one side
    writes as null or empty where the other leaves it out (a client library's model of a reply writes out the
    fields the wire left unsaid: absence, not another reply). A boolean is never a number, nor a number text.
    """
    if isinstance(recorded, str) and not isinstance(sent, str) and at == "$":
        try:
            recorded = loads(recorded)  # bounded depth and size: the text is the harness's
        except JsonFault:
            return f"{at}: recorded as text that is not JSON"
    if isinstance(recorded, dict) and isinstance(sent, dict):
        for key in sorted(set(recorded) | set(sent), key=str):
            if (key not in sent and _empty(recorded[key])) or (key not in recorded and _empty(sent[key])):
                continue
            if key not in sent:
                return f"{at}.{key}: recorded {_short(recorded[key])}, the reply sent none"
            if key not in recorded:
                return f"{at}.{key}: not recorded, the reply sent {_short(sent[key])}"
            found = body_difference(recorded[key], sent[key], f"{at}.{key}")
            if found:
                return found
        return None
    if isinstance(recorded, list) and isinstance(sent, list):
        if len(recorded) != len(sent):
            return f"{at}: {len(recorded)} items recorded, the reply sent {len(sent)}"
        for n, (r, s) in enumerate(zip(recorded, sent, strict=True)):
            found = body_difference(r, s, f"{at}[{n}]")
            if found:
                return found
        return None
    if _number(recorded) and _number(sent):
        return None if recorded == sent else f"{at}: recorded {recorded!r}, the reply sent {sent!r}"
    if type(recorded) is type(sent) and recorded == sent:
        return None
    return f"{at}: recorded {_short(recorded)}, the reply sent {_short(sent)}"


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _short(value: Any) -> str:
    text = json.dumps(value, default=repr)
    return text if len(text) <= 80 else text[:77] + "..."
