"""A scripted provider on 127.0.0.1 (Chat Completions, Responses, Messages) answering requests from a list, in order."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Reply:
    """One scripted HTTP response."""

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    # Send the body chunked and drop the connection before the terminating chunk (a cut stream).
    cut: bool = False
    # Hold the response this long (released early when the provider stops), to provoke client timeouts.
    delay_s: float = 0.0
    # Send the status line and headers, then hold the body this long (a withheld stream).
    withhold_body_s: float = 0.0


@dataclass
class Received:
    path: str
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)  # names lower-cased


def json_reply(status: int, payload: object, headers: dict[str, str] | None = None) -> Reply:
    return Reply(status=status, body=json.dumps(payload).encode(), headers=headers or {})


def completion(
    response_id: str,
    *,
    content: str | None = None,
    tool_calls: Sequence[tuple[str, str, str]] = (),
    usage: dict[str, Any] | None = None,
) -> Reply:
    """A 200 chat.completion; tool_calls are (id, name, raw arguments)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in tool_calls
        ]
    payload: dict[str, Any] = {
        "id": response_id,
        "object": "chat.completion",
        "created": 1,
        "model": "probe-model",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if tool_calls else "stop",
            }
        ],
    }
    if usage is not None:
        payload["usage"] = usage
    return json_reply(200, payload)


def usage(prompt: int, completion_: int, *, reasoning: int | None = None, cached: int | None = None) -> dict[str, Any]:
    result: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion_,
        "total_tokens": prompt + completion_,
    }
    if reasoning is not None:
        result["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    if cached is not None:
        result["prompt_tokens_details"] = {"cached_tokens": cached}
    return result


def chunk(response_id: str, delta: dict[str, Any] | None = None, finish: str | None = None) -> dict[str, Any]:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {
        "id": response_id,
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "probe-model",
        "choices": choices,
    }


def sse_reply(events: Sequence[object], *, done: bool = True, cut: bool = False, named: bool = False) -> Reply:
    """An SSE body; `named` adds an `event:` line with each event's `type` (Responses and Messages do)."""
    text = ""
    for event in events:
        if named and isinstance(event, dict):
            text += f"event: {event['type']}\n"
        text += f"data: {json.dumps(event)}\n\n"
    if done:
        text += "data: [DONE]\n\n"
    return Reply(status=200, body=text.encode(), content_type="text/event-stream", cut=cut)


# --- Responses API -------------------------------------------------------------------------------------


def response_object(
    response_id: str,
    *,
    content: str | None = None,
    tool_calls: Sequence[tuple[str, str, str]] = (),
    usage: dict[str, Any] | None = None,
    status: str = "completed",
) -> dict[str, Any]:
    """A `response` object; tool_calls are (call id, name, raw arguments)."""
    output: list[dict[str, Any]] = []
    if content is not None:
        output.append(
            {
                "type": "message",
                "id": f"msg_{response_id}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": content, "annotations": []}],
            }
        )
    for call_id, name, arguments in tool_calls:
        output.append(
            {
                "type": "function_call",
                "id": f"fc_{call_id}",
                "call_id": call_id,
                "name": name,
                "arguments": arguments,
                "status": "completed",
            }
        )
    payload: dict[str, Any] = {
        "id": response_id,
        "object": "response",
        "created_at": 1,
        "model": "probe-model",
        "status": status,
        "output": output,
    }
    if usage is not None:
        payload["usage"] = usage
    return payload


def responses_usage(
    input_: int, output: int, *, reasoning: int | None = None, cached: int | None = None
) -> dict[str, Any]:
    result: dict[str, Any] = {"input_tokens": input_, "output_tokens": output, "total_tokens": input_ + output}
    if cached is not None:
        result["input_tokens_details"] = {"cached_tokens": cached}
    if reasoning is not None:
        result["output_tokens_details"] = {"reasoning_tokens": reasoning}
    return result


def response_events(response: dict[str, Any], *, terminal: str | None = "response.completed") -> list[dict[str, Any]]:
    """The event sequence the Responses API streams for `response`, text and arguments in two deltas each."""
    started = {**response, "status": "in_progress", "output": []}
    started.pop("usage", None)
    events: list[dict[str, Any]] = [{"type": "response.created", "response": started}]
    for index, item in enumerate(response["output"]):
        opening = {**item, "content": []} if item["type"] == "message" else {**item, "arguments": ""}
        events.append({"type": "response.output_item.added", "output_index": index, "item": opening})
        if item["type"] == "message":
            text = item["content"][0]["text"]
            for piece in (text[: len(text) // 2], text[len(text) // 2 :]):
                events.append(
                    {
                        "type": "response.output_text.delta",
                        "output_index": index,
                        "content_index": 0,
                        "item_id": item["id"],
                        "delta": piece,
                    }
                )
        else:
            arguments = item["arguments"]
            for piece in (arguments[: len(arguments) // 2], arguments[len(arguments) // 2 :]):
                events.append(
                    {
                        "type": "response.function_call_arguments.delta",
                        "output_index": index,
                        "item_id": item["id"],
                        "delta": piece,
                    }
                )
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    if terminal is not None:
        events.append({"type": terminal, "response": response})
    return [{**event, "sequence_number": n} for n, event in enumerate(events)]


# --- Anthropic Messages ----------------------------------------------------------------------------------


def message_object(
    message_id: str,
    *,
    content: str | None = None,
    tool_calls: Sequence[tuple[str, str, dict[str, Any]]] = (),
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A `message` object; tool_calls are (tool_use id, name, input object)."""
    blocks: list[dict[str, Any]] = []
    if content is not None:
        blocks.append({"type": "text", "text": content})
    blocks += [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in tool_calls]
    payload: dict[str, Any] = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": "probe-model",
        "content": blocks,
        "stop_reason": "tool_use" if tool_calls else "end_turn",
        "stop_sequence": None,
    }
    if usage is not None:
        payload["usage"] = usage
    return payload


def messages_usage(input_: int, output: int, *, cache_read: int = 0, cache_creation: int = 0) -> dict[str, Any]:
    """Usage as the Messages API sends it: input_tokens leaves the cache reads and writes out."""
    return {
        "input_tokens": input_,
        "cache_creation_input_tokens": cache_creation,
        "cache_read_input_tokens": cache_read,
        "output_tokens": output,
    }


def message_events(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The event sequence the Messages API streams for `message`.

    As the API does: message_start carries the input-side usage and output_tokens 1, message_delta
    the final output_tokens; a message without usage streams none at all.
    """
    usage = message.get("usage")
    start = {**message, "content": [], "stop_reason": None}
    start.pop("usage", None)
    if usage is not None:
        start["usage"] = {**usage, "output_tokens": 1}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            events.append(
                {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}
            )
            text = block["text"]
            for piece in (text[: len(text) // 2], text[len(text) // 2 :]):
                events.append(
                    {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}}
                )
        else:
            opening = {**block, "input": {}}
            events.append({"type": "content_block_start", "index": index, "content_block": opening})
            raw = json.dumps(block["input"])
            for piece in (raw[: len(raw) // 2], raw[len(raw) // 2 :]):
                delta = {"type": "input_json_delta", "partial_json": piece}
                events.append({"type": "content_block_delta", "index": index, "delta": delta})
        events.append({"type": "content_block_stop", "index": index})
    delta_event: dict[str, Any] = {
        "type": "message_delta",
        "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
    }
    if usage is not None:
        delta_event["usage"] = {"output_tokens": usage["output_tokens"]}
    events += [delta_event, {"type": "message_stop"}]
    return events


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        provider = self.server.provider
        headers = {name.lower(): value for name, value in self.headers.items()}
        reply = provider.take(Received(self.path, json.loads(raw) if raw else {}, headers))
        if reply.delay_s and provider.stopping.wait(reply.delay_s):
            return
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        if reply.withhold_body_s:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.flush()
            if provider.stopping.wait(reply.withhold_body_s):
                return
            self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(reply.body), reply.body))
            self.close_connection = True
            return
        if reply.cut:
            # Half the body as one chunk, then the connection goes away without the final chunk.
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            part = reply.body[: len(reply.body) // 2]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        self.send_header("Content-Length", str(len(reply.body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(reply.body)
        self.close_connection = True

    def do_GET(self) -> None:
        # Model metadata (the context window): answered from `models`, outside the scripted replies.
        model = self.server.provider.models.get(self.path.rsplit("/", 1)[-1])
        body = json.dumps(model if model is not None else {"error": {"message": "no such model"}}).encode()
        self.send_response(200 if model is not None else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output quiet


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    provider: FakeProvider

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that timed out and hung up is expected in some scripts


class FakeProvider:
    """Serves `script` in order; a request beyond the script gets a 500 and is noted as a violation."""

    def __init__(self, script: Sequence[Reply]) -> None:
        self._script = list(script)
        self._lock = threading.Lock()
        self.received: list[Received] = []
        self.violations: list[str] = []
        self.stopping = threading.Event()
        self.root = ""  # the Anthropic SDK's base URL: it appends /v1/messages itself
        self.url = ""  # the openai SDK's base URL
        self.models: dict[str, dict[str, Any]] = {}  # GET /v1/models/<id> answers, by id

    def take(self, request: Received) -> Reply:
        with self._lock:
            self.received.append(request)
            if self._script:
                return self._script.pop(0)
            self.violations.append(f"unscripted request {len(self.received)} to {request.path}")
            return json_reply(500, {"error": {"message": "script exhausted"}})

    @property
    def remaining(self) -> int:
        return len(self._script)


@contextmanager
def serve(script: Sequence[Reply]) -> Iterator[FakeProvider]:
    provider = FakeProvider(script)
    server = _Server(("127.0.0.1", 0), _Handler)
    server.provider = provider
    provider.root = f"http://127.0.0.1:{server.server_address[1]}"
    provider.url = f"{provider.root}/v1"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield provider
    finally:
        provider.stopping.set()
        server.shutdown()
        server.server_close()
        thread.join()
