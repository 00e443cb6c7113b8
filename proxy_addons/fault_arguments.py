"""`args_truncated`: the due step's tool calls with their arguments JSON cut off and nothing else amiss (Chat's
`finish_reason: stop`, a completed response, Messages' `tool_use`): a shape real upstreams send. A text delivery
(keystrokes, a python block) gets its reply text cut the same way.

Gemini sends no arguments text: its API parses the model's call itself and sends `args` as an object, whole, or not
at all. A call whose arguments did not parse reaches the client as Google sends it: a candidate with an empty
content and `finishReason: MALFORMED_FUNCTION_CALL`, the call dropped whole (the API puts no part of it in the reply).
That is the cut arguments as this wire can carry them; what is judged is that the call is never run."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from typing import Any

from proxy_addons.chat import completion_chunks, split_pieces
from proxy_addons.fault_shapes import AlteredReply, restreamed, unterminated
from proxy_addons.gemini import gemini_events, gemini_rendered
from proxy_addons.messages import message_events
from proxy_addons.protocol import RenderedReply, compact_json
from proxy_addons.responses import response_events

# Chat puts this finish reason on the shape seen from real upstreams (a cut tool call in a reply that says `stop`).
CHAT_STOP = "stop"
GEMINI_MALFORMED = "MALFORMED_FUNCTION_CALL"


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


def _gemini(rendered: RenderedReply) -> AlteredReply:
    response: dict[str, Any] = copy.deepcopy(dict(rendered.response))
    candidate = response["candidates"][0]
    parts = candidate["content"].get("parts", [])
    dropped = tuple(part["functionCall"]["id"] for part in parts if "functionCall" in part)
    stream = rendered.sse_events is not None
    if not dropped:  # a text delivery: its text cut as elsewhere
        for part in parts:
            part["text"] = unterminated(part.get("text", ""))
        return _altered(
            gemini_rendered(response, stream, rendered.response_id, rendered.finish_reason, rendered.usage), {}
        )
    # What Google sends for a call it could not parse: no parts at all (`content: {}`), the reason, the usage.
    response["candidates"] = [{"content": {}, "finishReason": GEMINI_MALFORMED, "index": 0}]
    if stream:
        # One event: the API has nothing to send before it knows the call failed.
        altered = gemini_events(response, [compact_json(response)], GEMINI_MALFORMED, rendered.usage)
    else:
        altered = gemini_rendered(response, False, rendered.response_id, GEMINI_MALFORMED, rendered.usage)
    played = {"finish_reason": GEMINI_MALFORMED, "dropped_calls": list(dropped)}
    return AlteredReply(altered, played, usable=True, dropped_calls=dropped)


def _altered(rendered: RenderedReply, cut: dict[str, str]) -> AlteredReply:
    return AlteredReply(rendered, {"cut_arguments": dict(cut)}, usable=True, cut_arguments=cut)


RENDER: dict[str, Callable[[RenderedReply], AlteredReply]] = {
    "chat": _chat,
    "responses": _responses,
    "messages": _messages,
    "gemini": _gemini,
}
