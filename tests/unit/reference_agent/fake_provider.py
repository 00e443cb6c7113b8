"""A scripted Chat Completions provider on 127.0.0.1 that answers requests from a list, in order."""

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


@dataclass
class Received:
    path: str
    body: dict[str, Any]


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


def sse_reply(events: Sequence[object], *, done: bool = True, cut: bool = False) -> Reply:
    text = "".join(f"data: {json.dumps(e)}\n\n" for e in events)
    if done:
        text += "data: [DONE]\n\n"
    return Reply(status=200, body=text.encode(), content_type="text/event-stream", cut=cut)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        provider = self.server.provider
        reply = provider.take(Received(self.path, json.loads(raw) if raw else {}))
        if reply.delay_s and provider.stopping.wait(reply.delay_s):
            return
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        for name, value in reply.headers.items():
            self.send_header(name, value)
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
        self.url = ""

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
    provider.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield provider
    finally:
        provider.stopping.set()
        server.shutdown()
        server.server_close()
        thread.join()
