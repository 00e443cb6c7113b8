"""One Pi assistant message -> one probe-rollout/v1 model call: status, finish reason, token counts, times."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, cast

from orchestrator.harnesses.errors_text import transport_category
from orchestrator.harnesses.values import epoch_iso, integer, string
from orchestrator.records import ModelCall, TokenStats, token_stats

__all__ = ["FAILED", "PROTOCOLS", "category", "content_text", "iso", "model_call", "status_of"]

# Pi's `api` of an assistant message -> our protocol names.
PROTOCOLS = {"openai-completions": "chat", "openai-responses": "responses", "anthropic-messages": "messages"}
# Pi keeps its own stop reason vocabulary (pi-ai providers' mapStopReason). Per protocol, each of its values
# has one wire value it is made from in practice; rarer ones (Chat's `end`, Anthropic's `pause_turn`) fold in.
FINISH_REASONS = {
    "chat": {"stop": "stop", "toolUse": "tool_calls", "length": "length"},
    "responses": {"stop": "completed", "toolUse": "completed", "length": "incomplete"},
    "messages": {"stop": "end_turn", "toolUse": "tool_use", "length": "max_tokens"},
}
FAILED = ("error", "aborted")  # stop reasons of an attempt that did not end in a reply
_STATUS = re.compile(r"^\s*(\d{3})\b")  # the provider SDKs' APIError message starts with the HTTP status
_USAGE_KEYS = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")


def model_call(invocation_id: str, entry_id: str, appended_at: str | None, m: dict[str, Any]) -> ModelCall:
    """The record of one assistant message: a reply Pi received whole, or an attempt that ended in an error."""
    api = string(m.get("api"))
    # An api we do not know stays as Pi named it (the schema checks then report it); none at all stays null.
    protocol = PROTOCOLS.get(api, api) if api else None
    stop = m.get("stopReason")
    ok = stop not in FAILED
    error = string(m.get("errorMessage"))
    status = 200 if ok else status_of(error)
    record: dict[str, Any] = {
        "model_call_id": f"{invocation_id}/{entry_id}",
        # Pi stamps an assistant message when it starts the request, and appends its entry when it ends.
        "started_at": epoch_iso(m.get("timestamp"), per_second=1000),
        "completed_at": iso(appended_at),
        "protocol": protocol,
        "status_code": status,
        # A failed attempt may carry the id of a stream cut midway: kept in extensions, not as a reply's id.
        "response_id": string(m.get("responseId")) if ok else None,
        "finish_reason": FINISH_REASONS.get(protocol or "", {}).get(str(stop), string(stop)) if ok else None,
        "error_category": None if ok else category(status, error, stop),
        # As recorded: pi-ai starts every message with zero usage, so an attempt that got none still says 0.
        "token_stats": _tokens(protocol or "", m.get("usage")),
        "invocation_id": invocation_id,
    }
    if not ok:
        record["error"] = error
    # Typed once built: a protocol Pi named that we do not know is kept as is, for the schema checks to report.
    return cast(ModelCall, record)


def status_of(error: str | None) -> int | None:
    found = _STATUS.match(error or "")
    return int(found.group(1)) if found else None


def category(status: int | None, error: str | None, stop: Any) -> str:
    if status is not None:
        return f"http_{status}"
    if stop == "aborted":
        return "aborted"
    return transport_category(error) or "error"


def _tokens(protocol: str, usage: Any) -> TokenStats:
    """Pi's usage, turned back into the counts the protocol carried (pi-ai takes cached tokens out of input)."""
    u = usage if isinstance(usage, dict) else {}
    n = {k: integer(u.get(k)) for k in _USAGE_KEYS}
    inp, out, read, write, total = (n[k] for k in _USAGE_KEYS)
    if inp is None:
        prompt, cached = None, read
    elif protocol == "messages":
        # pi-ai keeps Anthropic's three disjoint counts as they came (input_tokens as `input`, the cache reads
        # and writes as cacheRead and cacheWrite): the prompt is their sum, unknown if a part is unrecorded.
        prompt = None if read is None or write is None else inp + read + write
        cached = read
    elif protocol == "responses":
        prompt, cached = inp + (read or 0), read
    else:
        # Chat: pi-ai's input = prompt_tokens - cacheRead - cacheWrite, and cacheRead + cacheWrite = cached_tokens.
        prompt, cached = inp + (read or 0) + (write or 0), (read or 0) + (write or 0)
    return token_stats(prompt=prompt, completion=out, total=total, cached=cached)


def content_text(content: Any) -> str | None:
    """The text of a message's content (a string, or text blocks joined); thinking and images left out."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    texts = [b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text" and string(b.get("text"))]
    return "".join(texts) if texts else None


def iso(value: str | None) -> str | None:
    try:
        parsed = datetime.fromisoformat(value) if value else None
    except ValueError:
        return None
    if parsed is None or parsed.tzinfo is None:
        return None
    return parsed.isoformat(timespec="milliseconds").replace("+00:00", "Z")
