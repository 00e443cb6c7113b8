"""`length_cut`: the due step's reply ended at the token limit, in each protocol's words: Chat `finish_reason:
length`, Responses `status: incomplete` (`incomplete_details.reason: max_output_tokens`, a `response.incomplete`
event), Messages `stop_reason: max_tokens`. Its text is cut in half; a reply of tool calls has their arguments cut."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from proxy_addons.chat import completion_chunks
from proxy_addons.fault_arguments import cut_messages_input
from proxy_addons.fault_shapes import AlteredReply, half, restreamed
from proxy_addons.gemini import MODEL_ROLE, gemini_rendered
from proxy_addons.messages import message_events
from proxy_addons.protocol import RenderedReply, compact_json
from proxy_addons.responses import response_events

CHAT_LENGTH = "length"
RESPONSES_INCOMPLETE = "incomplete"
MESSAGES_MAX_TOKENS = "max_tokens"
GEMINI_MAX_TOKENS = "MAX_TOKENS"


def _chat(rendered: RenderedReply) -> AlteredReply:
    completion = copy.deepcopy(dict(rendered.response))
    choice = completion["choices"][0]
    message = choice["message"]
    choice["finish_reason"] = CHAT_LENGTH
    cut: dict[str, str] = {}
    for call in message.get("tool_calls") or []:
        call["function"]["arguments"] = cut[call["id"]] = half(call["function"]["arguments"])
    answer = None
    if not cut:
        message["content"] = answer = half(message.get("content") or "")
    events = [(chunk, None) for chunk in completion_chunks(completion)]
    return _altered(restreamed(rendered, completion, events, CHAT_LENGTH), answer, cut)


def _responses(rendered: RenderedReply) -> AlteredReply:
    response: dict[str, Any] = copy.deepcopy(dict(rendered.response))
    response["status"] = RESPONSES_INCOMPLETE
    response["incomplete_details"] = {"reason": "max_output_tokens"}
    cut: dict[str, str] = {}
    answer = None
    for item in response["output"]:
        item["status"] = RESPONSES_INCOMPLETE
        if item["type"] == "function_call":
            item["arguments"] = cut[item["call_id"]] = half(item["arguments"])
        else:
            part = item["content"][0]
            part["text"] = answer = half(part["text"])
    events = []
    for event in response_events(response):
        if event["type"] == "response.completed":
            # A response that stopped at the limit ends its stream with response.incomplete, not completed.
            event = {**event, "type": "response.incomplete"}
        events.append((compact_json(event), str(event["type"])))
    return _altered(restreamed(rendered, response, events, RESPONSES_INCOMPLETE), answer, cut)


def _messages(rendered: RenderedReply) -> AlteredReply:
    message: dict[str, Any] = copy.deepcopy(dict(rendered.response))
    message["stop_reason"] = MESSAGES_MAX_TOKENS
    cut: dict[str, str] = {}
    answer = None
    for block in message["content"]:
        if block["type"] == "text":
            block["text"] = answer = half(block["text"])
        elif block["type"] == "tool_use":
            cut[block["id"]] = half(compact_json(block["input"]))
    events: list[tuple[str, str | None]] = [(compact_json(e), str(e["type"])) for e in message_events(message)]
    if cut:
        # A tool input cut at the limit arrives as partial_json pieces that never close.
        message, events = cut_messages_input(message, events, cut)
    return _altered(restreamed(rendered, message, events, MESSAGES_MAX_TOKENS), answer, cut)


def _gemini(rendered: RenderedReply) -> AlteredReply:
    response: dict[str, Any] = copy.deepcopy(dict(rendered.response))
    candidate = response["candidates"][0]
    candidate["finishReason"] = GEMINI_MAX_TOKENS
    parts = candidate["content"].get("parts", [])
    dropped = tuple(part["functionCall"]["id"] for part in parts if "functionCall" in part)
    kept = [part for part in parts if "functionCall" not in part]
    answer = None
    for part in kept:
        part["text"] = answer = half(part.get("text", ""))
    candidate["content"] = {"parts": kept, "role": MODEL_ROLE} if kept else {"role": MODEL_ROLE}
    stream = rendered.sse_events is not None
    altered = gemini_rendered(response, stream, rendered.response_id, GEMINI_MAX_TOKENS, rendered.usage)
    played: dict[str, Any] = {"finish_reason": GEMINI_MAX_TOKENS}
    if dropped:
        played["dropped_calls"] = list(dropped)
    return AlteredReply(altered, played, usable=True, answer=answer, dropped_calls=dropped)


def _altered(rendered: RenderedReply, answer: str | None, cut: dict[str, str]) -> AlteredReply:
    played = {"finish_reason": rendered.finish_reason}
    return AlteredReply(rendered, played, usable=True, answer=answer, cut_arguments=cut)


RENDER: dict[str, Callable[[RenderedReply], AlteredReply]] = {
    "chat": _chat,
    "responses": _responses,
    "messages": _messages,
    "gemini": _gemini,
}
