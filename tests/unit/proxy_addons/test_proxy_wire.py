"""The real mitmdump on the wire: timed faults (cut, withheld, delayed, reset) arrive as scripted, with real timing."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import anthropic
import httpx
import openai
import pytest
import yaml
from conftest import (
    BASH_TOOL,
    MESSAGES_BASH_TOOL,
    REPO,
    RESPONSES_NAMESPACE_TOOL,
    Mitmdump,
    run_command,
    start_mitmdump,
    tool_success_scenario,
    wait_listening,
)

USER = {"role": "user", "content": "Run the shell commands you are asked to run."}
CUT_PAUSE = 0.4
DELAY = 1.0


def _seconds(timestamp: str) -> float:
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


def with_faults(*faults: dict[str, Any]) -> dict[str, Any]:
    scenario = tool_success_scenario()
    scenario["faults"] = list(faults)
    return scenario


def shipped(name: str) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((REPO / "scenarios" / f"{name}.yaml").read_text())
    document.setdefault("overrides", {})
    return document


PROXIES: dict[str, dict[str, Any]] = {
    "cut": with_faults({"attempt": 0, "kind": "cut", "repeat": True, "pause_seconds": CUT_PAUSE}),
    "stream_cut": shipped("stream_cut"),
    "server_timeout": shipped("server_timeout"),
    "harness_deadline": shipped("harness_deadline"),
    "withhold": with_faults({"attempt": 0, "kind": "withhold", "repeat": True, "max_seconds": 30}),
    "withhold_cap": with_faults({"attempt": 0, "kind": "withhold", "max_seconds": 0.5}),
    "delay": with_faults(
        {
            "attempt": 0,
            "kind": "http_error",
            "status": 504,
            "error_type": "model_timeout",
            "message": "model request timed out",
            "delay_seconds": DELAY,
            "repeat": True,
        }
    ),
    "reset": with_faults({"attempt": 0, "kind": "reset"}),
}


@pytest.fixture(scope="module")
def proxies(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Mitmdump]]:
    """One real mitmdump per scenario, started together; each witness is validated when they stop."""
    root = tmp_path_factory.mktemp("wire")
    started = {name: start_mitmdump(root / name, scenario) for name, scenario in PROXIES.items()}
    try:
        with ThreadPoolExecutor(len(started)) as pool:
            running = dict(zip(started, pool.map(wait_listening, started.values()), strict=True))
        yield running
    finally:
        with ThreadPoolExecutor(len(started)) as pool:
            list(pool.map(Mitmdump.stop, started.values()))


# -- a raw HTTP/1.1 client that timestamps what arrives ------------------------------------------------


@dataclass
class Exchange:
    """What a raw client saw: bytes with arrival times, and how the connection ended."""

    started: float
    reads: list[tuple[float, bytes]] = field(default_factory=list)
    closed_at: float | None = None
    gave_up_at: float | None = None

    @property
    def data(self) -> bytes:
        return b"".join(chunk for _, chunk in self.reads)

    def head_and_body(self) -> tuple[bytes, bytes]:
        head, _, body = self.data.partition(b"\r\n\r\n")
        return head, body

    def events(self) -> list[tuple[float, str]]:
        """`data:` payloads of a chunked SSE body, each with the time its last byte arrived."""
        found: list[tuple[float, str]] = []
        seen = b""
        for at, chunk in self.reads:
            seen += chunk
            body = seen.partition(b"\r\n\r\n")[2]
            payloads = [
                line[len(b"data: ") :].decode() for line in dechunk(body).split(b"\n") if line.startswith(b"data: ")
            ]
            found.extend((at, payload) for payload in payloads[len(found) :])
        return found


def dechunk(body: bytes) -> bytes:
    """The payload of a (possibly incomplete) chunked body."""
    out = b""
    while body:
        size_line, sep, rest = body.partition(b"\r\n")
        if not sep:
            break
        size = int(size_line, 16)
        if size == 0:
            break
        out += rest[:size]
        body = rest[size + 2 :]
    return out


def raw_post(
    proxy: Mitmdump, path: str, body: dict[str, Any], give_up_after: float | None = None, timeout: float = 10.0
) -> Exchange:
    payload = json.dumps(body).encode()
    request = (
        f"POST {path} HTTP/1.1\r\nHost: provider:8080\r\ncontent-type: application/json\r\n"
        f"content-length: {len(payload)}\r\n\r\n"
    ).encode() + payload
    exchange = Exchange(started=time.monotonic())
    with socket.create_connection(("127.0.0.1", proxy.port)) as sock:
        sock.sendall(request)
        deadline = exchange.started + (give_up_after if give_up_after is not None else timeout)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                exchange.gave_up_at = time.monotonic()
                break
            sock.settimeout(remaining)
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                continue
            except ConnectionResetError:
                chunk = b""
            now = time.monotonic()
            if not chunk:
                exchange.closed_at = now
                break
            exchange.reads.append((now, chunk))
    return exchange


def chat_request(stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "probe-model", "messages": [USER], "tools": [BASH_TOOL]}
    if stream:
        body.update(stream=True, stream_options={"include_usage": True})
    return body


# -- cut -----------------------------------------------------------------------------------------------


def test_cut_stream_delivers_the_first_events_before_the_connection_closes(proxies: dict[str, Mitmdump]) -> None:
    proxy = proxies["cut"]
    before = len(proxy.events("attempt")) if proxy.witness.exists() else 0
    exchange = raw_post(proxy, "/v1/chat/completions", chat_request(stream=True))
    assert exchange.closed_at is not None, "the proxy must close the connection"
    head, _ = exchange.head_and_body()
    assert head.startswith(b"HTTP/1.1 200") and b"text/event-stream" in head
    events = exchange.events()
    assert events, "the client must see events before the cut"
    first_at, _ = events[0]
    # The events arrived, and only later (the scripted pause) did the connection close.
    assert exchange.closed_at - first_at >= CUT_PAUSE * 0.8
    payloads = [json.loads(p) for _, p in events]
    assert payloads[0]["choices"][0]["delta"]["role"] == "assistant"
    head_delta = payloads[1]["choices"][0]["delta"]["tool_calls"][0]
    assert head_delta["function"]["name"] == "bash" and head_delta["id"].startswith("call_")
    assert all(p["choices"] and p["choices"][0]["finish_reason"] is None for p in payloads)  # cut before the end
    assert not dechunk(exchange.head_and_body()[1]).endswith(b"data: [DONE]\n\n")

    attempt = proxy.wait_for_attempts(before + 1)[before]
    assert (attempt["ended"], attempt["fault"], attempt["status"], attempt["step"]) == ("cut", "cut", 200, 0)
    assert attempt["sse_events"] == [p for _, p in events]
    assert attempt["reply_kind"] == "tool_calls" and attempt["tool_call_ids"] == [head_delta["id"]]
    assert attempt["response_id"] == payloads[0]["id"] and attempt["finish_reason"] is None
    assert attempt["usage"] is None and attempt["response"]["object"] == "chat.completion"
    assert "client_disconnected_at" not in attempt


def test_cut_json_reply_sends_half_the_body_then_closes(proxies: dict[str, Mitmdump]) -> None:
    proxy = proxies["cut"]
    before = len(proxy.events("attempt")) if proxy.witness.exists() else 0
    exchange = raw_post(proxy, "/v1/chat/completions", chat_request(stream=False))
    assert exchange.closed_at is not None
    head, body = exchange.head_and_body()
    length = int(
        next(line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")).split(b":")[1]
    )
    assert body and len(body) == length // 2
    with pytest.raises(json.JSONDecodeError):
        json.loads(body)
    attempt = proxy.wait_for_attempts(before + 1)[before]
    assert (attempt["ended"], attempt["stream"], attempt["sse_events"]) == ("cut", False, None)
    assert json.dumps(attempt["response"], separators=(",", ":")).encode().startswith(body)


@pytest.mark.parametrize("protocol", ["chat", "responses", "messages"])
def test_sdks_see_the_start_of_a_cut_stream_then_an_error(proxies: dict[str, Mitmdump], protocol: str) -> None:
    proxy = proxies["cut"]
    seen: list[str] = []
    with pytest.raises((openai.APIConnectionError, anthropic.APIConnectionError, httpx.TransportError)):
        if protocol == "chat":
            with openai.OpenAI(api_key="k", base_url=f"{proxy.base}/v1", max_retries=0) as sdk:
                stream = sdk.chat.completions.create(
                    model="probe-model",
                    messages=[USER],  # type: ignore[list-item]
                    tools=[BASH_TOOL],  # type: ignore[list-item]
                    stream=True,
                )
                for chunk in stream:
                    seen.append(chunk.object)
        elif protocol == "responses":
            with (
                openai.OpenAI(api_key="k", base_url=f"{proxy.base}/v1", max_retries=0) as sdk,
                sdk.responses.stream(
                    model="probe-model",
                    input=[USER],  # type: ignore[list-item]
                    tools=[RESPONSES_NAMESPACE_TOOL],  # type: ignore[list-item]
                ) as events,
            ):
                for event in events:
                    seen.append(event.type)
        else:
            with (
                anthropic.Anthropic(api_key="k", base_url=proxy.base, max_retries=0) as client,
                client.messages.stream(
                    model="probe-model",
                    max_tokens=1024,
                    messages=[USER],  # type: ignore[list-item]
                    tools=[MESSAGES_BASH_TOOL],  # type: ignore[list-item]
                ) as events,
            ):
                for event in events:
                    seen.append(event.type)
    assert seen, "the first events reach the SDK before the cut"
    if protocol == "responses":
        assert seen[:3] == ["response.created", "response.in_progress", "response.output_item.added"]
        assert "response.completed" not in seen
    elif protocol == "messages":
        assert seen[0] == "message_start" and "message_stop" not in seen


def play_chat(proxy: Mitmdump, timeout: float = 10.0) -> tuple[list[Any], list[type[Exception]]]:
    """An honest streaming chat harness with its own deadline: retry any failure, run tools, stop at text."""
    messages: list[dict[str, Any]] = [USER]
    completions: list[Any] = []
    failures: list[type[Exception]] = []
    with openai.OpenAI(api_key="k", base_url=f"{proxy.base}/v1", max_retries=0, timeout=timeout) as sdk:
        while len(completions) + len(failures) < 8:
            try:
                with sdk.chat.completions.stream(
                    model="probe-model",
                    messages=messages,  # type: ignore[arg-type]
                    tools=[BASH_TOOL],  # type: ignore[list-item]
                    stream_options={"include_usage": True},
                ) as stream:
                    for _ in stream:
                        pass
                    completion = stream.get_final_completion()
            except (openai.APIError, httpx.TransportError) as error:
                failures.append(type(error))
                continue
            completions.append(completion)
            message = completion.choices[0].message
            if not message.tool_calls:
                break
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                result = run_command(json.loads(call.function.arguments)["command"])  # type: ignore[union-attr]
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result.stdout})
    return completions, failures


def test_stream_cut_scenario_retry_gets_the_same_step_with_fresh_ids(proxies: dict[str, Mitmdump]) -> None:
    proxy = proxies["stream_cut"]
    completions, failures = play_chat(proxy)
    assert len(failures) == 1 and completions[-1].choices[0].message.content == "PROBE_DONE"
    attempts = proxy.wait_for_attempts(4)
    assert [(a["ended"], a["step"], a["model_attempt"]) for a in attempts] == [
        ("cut", 0, 0),
        ("complete", 0, 1),
        ("complete", 1, 2),
        ("complete", 2, 3),
    ]
    assert attempts[0]["request_sha256"] == attempts[1]["request_sha256"]
    assert set(attempts[0]["tool_call_ids"]).isdisjoint(attempts[1]["tool_call_ids"])
    assert attempts[0]["response_id"] != attempts[1]["response_id"]


def test_server_timeout_scenario_504_after_two_seconds_then_the_sequence(proxies: dict[str, Mitmdump]) -> None:
    proxy = proxies["server_timeout"]
    started = time.monotonic()
    completions, failures = play_chat(proxy)
    assert failures == [openai.InternalServerError] and time.monotonic() - started >= 2.0
    assert completions[-1].choices[0].message.content == "PROBE_DONE"
    attempts = proxy.wait_for_attempts(4)
    assert [(a["status"], a["ended"], a["fault"]) for a in attempts] == [
        (504, "complete", "http_error"),
        (200, "complete", None),
        (200, "complete", None),
        (200, "complete", None),
    ]
    assert attempts[0]["response"]["error"]["type"] == "model_timeout"


def test_harness_deadline_scenario_the_client_gives_up_then_the_sequence(proxies: dict[str, Mitmdump]) -> None:
    proxy = proxies["harness_deadline"]
    completions, failures = play_chat(proxy, timeout=1.0)
    # The headers arrived at once: it is the read (idle) deadline that fires, inside the stream.
    assert failures == [httpx.ReadTimeout] and completions[-1].choices[0].message.content == "PROBE_DONE"
    attempts = proxy.wait_for_attempts(4)
    withheld = next(a for a in attempts if a["attempt_id"] == "attempt-0")
    assert (withheld["ended"], withheld["status"], withheld["sse_events"]) == ("withheld", 200, [])
    assert 0.8 <= _seconds(withheld["client_disconnected_at"]) - _seconds(withheld["started_at"]) <= 3.0
    assert sorted(a["model_attempt"] for a in attempts) == [0, 1, 2, 3]


# -- withheld --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False], ids=["sse", "json"])
def test_withheld_reply_until_the_client_gives_up(proxies: dict[str, Mitmdump], stream: bool) -> None:
    proxy = proxies["withhold"]
    before = len(proxy.events("attempt")) if proxy.witness.exists() else 0
    exchange = raw_post(proxy, "/v1/chat/completions", chat_request(stream=stream), give_up_after=1.0)
    assert exchange.gave_up_at is not None and exchange.closed_at is None, "the proxy must not end it"
    head, body = exchange.head_and_body()
    if stream:
        assert head.startswith(b"HTTP/1.1 200") and b"text/event-stream" in head
        assert dechunk(body) == b": probe wait\n\n"  # a keep-alive comment, then silence
    else:
        assert exchange.data == b""
    attempt = proxy.wait_for_attempts(before + 1)[before]
    assert (attempt["ended"], attempt["fault"], attempt["response"]) == ("withheld", "withhold", None)
    assert attempt["status"] == (200 if stream else None)
    assert attempt["sse_events"] == ([] if stream else None)
    assert attempt["client_disconnected_at"] >= attempt["started_at"]
    waited = _seconds(attempt["client_disconnected_at"]) - _seconds(attempt["started_at"])
    assert 0.8 <= waited <= 3.0


def test_withheld_reply_cap_closes_quietly_and_the_retry_gets_the_step(proxies: dict[str, Mitmdump]) -> None:
    proxy = proxies["withhold_cap"]
    exchange = raw_post(proxy, "/v1/chat/completions", chat_request(stream=False), timeout=5.0)
    assert exchange.closed_at is not None and exchange.data == b"", "closed with no reply (mitmproxy made no 502)"
    assert exchange.closed_at - exchange.started >= 0.4
    retried = httpx.post(f"{proxy.base}/v1/chat/completions", json=chat_request(stream=False), timeout=5)
    assert retried.status_code == 200 and retried.json()["choices"][0]["finish_reason"] == "tool_calls"
    first, second = proxy.wait_for_attempts(2)
    assert (first["ended"], first["status"]) == ("withheld", None) and "client_disconnected_at" not in first
    assert (second["ended"], second["step"], second["model_attempt"]) == ("complete", 0, 1)


# -- delayed error, reset ----------------------------------------------------------------------------------


def read_response(sock: socket.socket) -> tuple[bytes, bytes]:
    """One whole content-length response from `sock`: (head, body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(
        next(line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")).split(b":")[1]
    )
    while len(body) < length:
        body += sock.recv(65536)
    return head, body


def test_delayed_504_arrives_after_the_delay_on_a_kept_alive_connection(proxies: dict[str, Mitmdump]) -> None:
    proxy = proxies["delay"]
    before = len(proxy.events("attempt")) if proxy.witness.exists() else 0
    payload = json.dumps(chat_request(stream=True)).encode()
    request = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: provider\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\n\r\n%s" % (len(payload), payload)
    )
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as sock:
        for _ in range(2):  # the second request goes over the connection the first one kept open
            started = time.monotonic()
            sock.sendall(request)
            head, body = read_response(sock)
            assert time.monotonic() - started >= DELAY
            assert head.startswith(b"HTTP/1.1 504") and b"content-type: application/json" in head.lower()
            assert json.loads(body)["error"] == {
                "message": "model request timed out",
                "type": "model_timeout",
                "code": "504",
            }
    attempts = proxy.wait_for_attempts(before + 2)[before:]
    for attempt in attempts:
        assert (attempt["status"], attempt["ended"], attempt["fault"]) == (504, "complete", "http_error")
        assert _seconds(attempt["completed_at"]) - _seconds(attempt["started_at"]) >= DELAY
        assert attempt["response"]["error"]["type"] == "model_timeout" and attempt["response_id"] is None


def test_client_giving_up_during_the_delay_is_witnessed_as_withheld(proxies: dict[str, Mitmdump]) -> None:
    proxy = proxies["delay"]
    before = len(proxy.events("attempt")) if proxy.witness.exists() else 0
    exchange = raw_post(proxy, "/v1/chat/completions", chat_request(stream=False), give_up_after=0.3)
    assert exchange.data == b""
    attempt = proxy.wait_for_attempts(before + 1)[before]
    assert (attempt["ended"], attempt["status"], attempt["response"]) == ("withheld", None, None)
    assert attempt["fault"] == "http_error" and "client_disconnected_at" in attempt


def test_reset_closes_without_a_reply_and_the_retry_gets_the_step(proxies: dict[str, Mitmdump]) -> None:
    proxy = proxies["reset"]
    exchange = raw_post(proxy, "/v1/chat/completions", chat_request(stream=True), timeout=5.0)
    assert exchange.closed_at is not None and exchange.data == b""
    retried = httpx.post(f"{proxy.base}/v1/chat/completions", json=chat_request(stream=False), timeout=5)
    assert retried.status_code == 200
    first, second = proxy.wait_for_attempts(2)
    assert (first["ended"], first["status"], first["response"], first["fault"]) == ("reset", None, None, "reset")
    assert (second["ended"], second["step"]) == ("complete", 0)
