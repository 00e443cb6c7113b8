"""`args_truncated`: the due step's tool calls with their arguments JSON cut off and nothing else amiss (Chat's
`finish_reason: stop`, a completed response, Messages' `tool_use`): a shape real upstreams send. A text delivery
(keystrokes, a python block) gets its reply text cut the same way."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from typing import Any

from proxy_addons.chat import completion_chunks, split_pieces
from proxy_addons.fault_shapes import AlteredReply, restreamed, unterminated
from proxy_addons.messages import message_events
from proxy_addons.protocol import RenderedReply, compact_json
from proxy_addons.responses import response_events

# Chat puts this finish reason on the shape seen from real upstreams (a cut tool call in a reply that says `stop`).
CHAT_STOP = "stop"


def _chat(rendered: RenderedReply) -> AlteredReply:
    completion = copy.deepcopy(dict(rendered.response))
    choice = completion["choices"][0]
    message = choice["message"]
    cut: dict[str, str] = {}
    for call in message.get("tool_calls") or []:
        call["function"]["arguments"] = cut[call["id"]] = unterminated(call["function"]["arguments"])
    choice["finish_reason"] = CHAT_STOP if cut else choice["finish_reason"]
    if not cut:
        message["content"] = unterminated(message.get("content") or "")
    events = [(chunk, None) for chunk in completion_chunks(completion)]
    return _altered(restreamed(rendered, completion, events, choice["finish_reason"]), cut)


def _responses(rendered: RenderedReply) -> AlteredReply:
    response: dict[str, Any] = copy.deepcopy(dict(rendered.response))
    cut: dict[str, str] = {}
    for item in response["output"]:
        if item["type"] == "function_call":
            item["arguments"] = cut[item["call_id"]] = unterminated(item["arguments"])
        else:
            part = item["content"][0]
            part["text"] = unterminated(part["text"])
    events = [(compact_json(e), str(e["type"])) for e in response_events(response)]
    return _altered(restreamed(rendered, response, events, rendered.finish_reason), cut)


def _messages(rendered: RenderedReply) -> AlteredReply:
    message: dict[str, Any] = copy.deepcopy(dict(rendered.response))
    cut: dict[str, str] = {}
    for block in message["content"]:
        if block["type"] == "tool_use":
            cut[block["id"]] = unterminated(compact_json(block["input"]))
        elif block["type"] == "text":
            block["text"] = unterminated(block["text"])
    events: list[tuple[str, str | None]] = [(compact_json(e), str(e["type"])) for e in message_events(message)]
    message, events = cut_messages_input(message, events, cut)
    return _altered(restreamed(rendered, message, events, rendered.finish_reason), cut)


def cut_messages_input(
    message: dict[str, Any], events: Sequence[tuple[str, str | None]], cut: dict[str, str]
) -> tuple[dict[str, Any], list[tuple[str, str | None]]]:
    """A Messages reply whose tool inputs are the texts in `cut` (tool_use id -> text that is not JSON).

    A stream carries each as `input_json_delta` pieces that never close; a JSON reply can only carry `input` as an
    object, so there it is the text itself, a string (what a gateway translating a cut OpenAI call sends on).
    """
    by_index = {n: cut[b["id"]] for n, b in enumerate(message["content"]) if b.get("id") in cut}
    for block in message["content"]:
        if block.get("id") in cut:
            block["input"] = cut[block["id"]]
    out: list[tuple[str, str | None]] = []
    for data, name in events:
        event = json.loads(data)
        index = event.get("index")
        if event["type"] == "content_block_delta" and index in by_index:
            continue  # replaced at the block's stop by the cut text's pieces
        elif event["type"] == "content_block_stop" and index in by_index:
            for piece in split_pieces(by_index[index]):
                delta = {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": piece},
                }
                out.append((compact_json(delta), "content_block_delta"))
            out.append((data, name))
        else:
            out.append((data, name))
    return message, out


def _altered(rendered: RenderedReply, cut: dict[str, str]) -> AlteredReply:
    return AlteredReply(rendered, {"cut_arguments": dict(cut)}, usable=True, cut_arguments=cut)


RENDER: dict[str, Callable[[RenderedReply], AlteredReply]] = {
    "chat": _chat,
    "responses": _responses,
    "messages": _messages,
}
