"""The real mitmdump on the wire, spoken to by google-genai: Gemini streams cut, withheld and delayed as scripted.

The SDK talks to a mitmdump on 127.0.0.1 (no network), as test_proxy_wire.py does with the openai SDK; it sends
through httpx2 (google-genai 3's own fork of httpx), whose transport errors are its own classes.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx2
import pytest
from conftest import Mitmdump, run_command, start_mitmdump, wait_listening
from google import genai
from google.genai import errors, types
from test_proxy_gemini_sdk import SHELL_TOOL
from test_proxy_wire import PROXIES, _seconds, raw_post

PROTOCOL_PROXIES = ("cut", "stream_cut", "server_timeout", "harness_deadline")
STREAM_PATH = "/v1beta/models/probe-model:streamGenerateContent?alt=sse"


@pytest.fixture(scope="module")
def proxies(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Mitmdump]]:
    root = tmp_path_factory.mktemp("gemini-wire")
    started = {name: start_mitmdump(root / name, PROXIES[name]) for name in PROTOCOL_PROXIES}
    try:
        with ThreadPoolExecutor(len(started)) as pool:
            running = dict(zip(started, pool.map(wait_listening, started.values()), strict=True))
        yield running
    finally:
        with ThreadPoolExecutor(len(started)) as pool:
            list(pool.map(Mitmdump.stop, started.values()))


def client(proxy: Mitmdump, timeout_ms: int | None = None) -> genai.Client:
    return genai.Client(api_key="probe-key", http_options=types.HttpOptions(base_url=proxy.base, timeout=timeout_ms))


CONFIG = types.GenerateContentConfig(
    tools=[types.Tool(function_declarations=[SHELL_TOOL])],
    automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
)


def play(proxy: Mitmdump, timeout_ms: int | None = 10_000) -> tuple[list[str], list[type[Exception]]]:
    """An honest streaming Gemini harness with its own deadline: retry any failure, run tools, stop at text."""
    contents: list[types.Content] = [types.Content(role="user", parts=[types.Part(text="Run the commands.")])]
    answers: list[str] = []
    failures: list[type[Exception]] = []
    with client(proxy, timeout_ms) as sdk:
        while len(answers) + len(failures) < 8:
            try:
                chunks = list(sdk.models.generate_content_stream(model="probe-model", contents=contents, config=CONFIG))
            except (errors.APIError, httpx2.TransportError) as error:
                failures.append(type(error))
                continue
            parts = [p for c in chunks for p in (c.candidates[0].content.parts or [])]  # type: ignore[index, union-attr]
            calls = [p.function_call for p in parts if p.function_call is not None]
            if not calls:
                answers.append("".join(p.text or "" for p in parts))
                break
            answers.append("")
            contents.append(types.Content(role="model", parts=[types.Part(function_call=c) for c in calls]))
            outputs = [run_command((c.args or {})["command"]).stdout for c in calls]
            contents.append(
                types.Content(
                    role="user",
                    parts=[
                        types.Part(
                            function_response=types.FunctionResponse(id=c.id, name=c.name, response={"output": out})
                        )
                        for c, out in zip(calls, outputs, strict=True)
                    ],
                )
            )
    return answers, failures


def test_cut_stream_delivers_its_first_event_then_the_sdk_sees_an_error(proxies: dict[str, Mitmdump]) -> None:
    proxy = proxies["cut"]
    before = len(proxy.events("attempt")) if proxy.witness.exists() else 0
    body: dict[str, Any] = {
        "contents": [{"role": "user", "parts": [{"text": "go"}]}],
        "tools": [{"functionDeclarations": [SHELL_TOOL.model_dump(mode="json", by_alias=True, exclude_none=True)]}],
    }
    exchange = raw_post(proxy, STREAM_PATH, body)
    assert exchange.closed_at is not None and exchange.head_and_body()[0].startswith(b"HTTP/1.1 200")
    # Of two events (the call, the finish), the first; its line ends in CR (Google's CRLF framing).
    (event,) = [p.removesuffix("\r") for _, p in exchange.events()]
    attempt = proxy.wait_for_attempts(before + 1)[before]
    assert (attempt["ended"], attempt["protocol"], attempt["stream"]) == ("cut", "gemini", True)
    assert attempt["sse_events"] == [event] and attempt["finish_reason"] is None and attempt["usage"] is None
    assert attempt["tool_call_ids"] == [
        attempt["response"]["candidates"][0]["content"]["parts"][0]["functionCall"]["id"]
    ]
    seen: list[Any] = []
    with client(proxy) as sdk, pytest.raises(httpx2.TransportError):
        for chunk in sdk.models.generate_content_stream(model="probe-model", contents="go", config=CONFIG):
            seen.append(chunk)
    assert len(seen) == 1 and seen[0].candidates[0].finish_reason is None


def test_stream_cut_scenario_retry_gets_the_same_step_with_fresh_ids(proxies: dict[str, Mitmdump]) -> None:
    proxy = proxies["stream_cut"]
    answers, failures = play(proxy)
    assert failures == [httpx2.RemoteProtocolError] and answers[-1] == "PROBE_DONE"
    attempts = proxy.wait_for_attempts(4)
    assert [(a["ended"], a["step"], a["model_attempt"]) for a in attempts] == [
        ("cut", 0, 0),
        ("complete", 0, 1),
        ("complete", 1, 2),
        ("complete", 2, 3),
    ]
    assert set(attempts[0]["tool_call_ids"]).isdisjoint(attempts[1]["tool_call_ids"])


def test_server_timeout_scenario_504_after_two_seconds_in_googles_shape(proxies: dict[str, Mitmdump]) -> None:
    proxy = proxies["server_timeout"]
    started = time.monotonic()
    answers, failures = play(proxy)
    assert failures == [errors.ServerError] and time.monotonic() - started >= 2.0 and answers[-1] == "PROBE_DONE"
    first = proxy.wait_for_attempts(4)[0]
    assert (first["status"], first["ended"]) == (504, "complete")
    assert first["response"] == {
        "error": {"code": 504, "message": "model request timed out", "status": "DEADLINE_EXCEEDED"}
    }


def test_harness_deadline_scenario_the_sdk_gives_up_then_the_sequence(proxies: dict[str, Mitmdump]) -> None:
    proxy = proxies["harness_deadline"]
    answers, failures = play(proxy, timeout_ms=1000)
    assert failures == [httpx2.ReadTimeout] and answers[-1] == "PROBE_DONE"
    attempts = proxy.wait_for_attempts(4)
    withheld = next(a for a in attempts if a["attempt_id"] == "attempt-0")
    assert (withheld["ended"], withheld["status"], withheld["sse_events"]) == ("withheld", 200, [])
    assert 0.8 <= _seconds(withheld["client_disconnected_at"]) - _seconds(withheld["started_at"]) <= 3.0
