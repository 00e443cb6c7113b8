"""The fault kinds of catalogue II, each protocol x {JSON, SSE} through the official SDKs: what the SDK makes of the
bytes (the provider's real shapes), what the witness records as played, and that the step is served again after.
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from typing import Any

import anthropic
import httpx
import openai
import pytest
from conftest import (
    BASH_TOOL,
    MESSAGES_BASH_TOOL,
    RESPONSES_EXEC_TOOL,
    MakeProvider,
    Provider,
    mock_transport,
    run_command,
)
from test_proxy_sdks import MODES, PROTOCOLS, Driver, MessagesDriver, ResponsesDriver, drive, execute

from proxy_addons import fault_not_json
from proxy_addons.fault_quota import QuotaWindow

__all__ = ["drive"]  # the fixture, shared with test_proxy_sdks

TWO_STEPS = [{"tool_calls": [{"exit_code": 0}]}, {"final_answer": "PROBE_DONE"}]


def _raw(driver: Driver, stream: bool) -> Any:
    """One request as the driver's SDK sends it, without the helpers that assemble a turn; a stream is read whole."""
    if isinstance(driver, MessagesDriver):
        reply: Any = driver.client.messages.create(
            model="probe-model",
            max_tokens=4096,
            messages=driver.messages,  # type: ignore[arg-type]
            tools=[MESSAGES_BASH_TOOL],  # type: ignore[list-item]
            stream=stream,
        )
    elif isinstance(driver, ResponsesDriver):
        reply = driver.sdk.responses.create(
            model="probe-model",
            input=driver.input,  # type: ignore[arg-type]
            tools=[RESPONSES_EXEC_TOOL],  # type: ignore[list-item]
            stream=stream,
        )
    else:
        extra: dict[str, Any] = {"stream_options": {"include_usage": True}} if stream else {}
        reply = driver.sdk.chat.completions.create(  # type: ignore[attr-defined]
            model="probe-model",
            messages=driver.messages,  # type: ignore[attr-defined]
            tools=[BASH_TOOL],
            stream=stream,
            **extra,
        )
    return list(reply) if stream else reply


def _after_first_tool(drive: Any, protocol: str, fault: dict[str, Any]) -> Driver:
    """A driver past the first scripted tool call (run for real), the fault due on the next attempt."""
    driver: Driver = drive(protocol, script=TWO_STEPS, faults=[fault])
    first = driver.turn(False)
    driver.feed(first, execute(first))
    return driver


def _fault_attempt(provider: Provider) -> dict[str, Any]:
    return next(a for a in provider.events("attempt") if a["fault"])


@pytest.mark.parametrize("stream", MODES, ids=["json", "sse"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_overloaded_is_each_protocols_retryable_overload_then_the_step(drive: Any, protocol: str, stream: bool) -> None:
    driver: Driver = drive(protocol, faults=[{"attempt": 0, "kind": "overloaded"}])
    expected = (
        (anthropic._exceptions.OverloadedError, 529) if protocol == "messages" else (openai.InternalServerError, 503)
    )
    with pytest.raises(expected[0]) as raised:
        driver.turn(stream)
    assert raised.value.status_code == expected[1]
    if protocol == "messages":
        body = raised.value.body
        assert isinstance(body, dict) and body["error"] == {"type": "overloaded_error", "message": "Overloaded"}
        assert body["request_id"].startswith("req_")
    else:
        assert raised.value.body == {
            "message": "The server is overloaded or not ready yet.",
            "type": "server_error",
            "param": None,
            "code": None,
        }
    assert len(driver.turn(stream).calls) == 1
    first, second = driver.provider.events("attempt")
    assert (first["status"], first["fault"], first["step"], first["response_id"]) == (
        expected[1],
        "overloaded",
        None,
        None,
    )
    assert (second["status"], second["step"], second["model_attempt"]) == (200, 0, 1)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_retry_after_ms_is_sent_and_witnessed_as_the_shortest_wait(drive: Any, protocol: str) -> None:
    fault = {"attempt": 0, "kind": "http_error", "status": 429, "retry_after": 3, "retry_after_ms": 2500}
    driver: Driver = drive(protocol, faults=[fault])
    with pytest.raises((openai.RateLimitError, anthropic.RateLimitError)) as raised:
        driver.turn(False)
    headers = raised.value.response.headers
    assert (headers["retry-after"], headers["retry-after-ms"]) == ("3", "2500")
    (attempt,) = driver.provider.events("attempt")
    assert attempt["played"] == {"headers": {"retry-after": "3", "retry-after-ms": "2500"}, "retry_after_seconds": 2.5}


def test_an_sdk_waits_the_time_retry_after_ms_asks_before_it_retries(make_provider: MakeProvider) -> None:
    fault = {"attempt": 0, "kind": "http_error", "status": 429, "retry_after": 1, "retry_after_ms": 700}
    provider = make_provider(faults=[fault])
    client = openai.OpenAI(
        api_key="k", base_url="http://provider:8080/v1", max_retries=1, http_client=_client(provider)
    )
    client.chat.completions.create(model="probe-model", messages=[{"role": "user", "content": "go"}], tools=[BASH_TOOL])  # type: ignore[list-item]
    first, second = provider.events("attempt")
    waited = _seconds(second["started_at"]) - _seconds(first["completed_at"])
    assert 0.7 <= waited < 2.0, waited


def _client(provider: Provider) -> httpx.Client:
    return httpx.Client(transport=mock_transport(provider))


def _seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp).timestamp()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_quota_serves_its_requests_then_429s_until_the_window_ends(drive: Any, protocol: str) -> None:
    driver: Driver = drive(protocol, faults=[{"attempt": 0, "kind": "quota", "requests": 1, "window_seconds": 0.6}])
    first = driver.turn(False)
    driver.feed(first, execute(first))
    with pytest.raises((openai.RateLimitError, anthropic.RateLimitError)) as raised:
        driver.turn(False)
    headers = raised.value.response.headers
    assert 0 < int(headers["retry-after-ms"]) <= 600 and headers["retry-after"] == "1"
    limit = "anthropic-ratelimit-requests-remaining" if protocol == "messages" else "x-ratelimit-remaining-requests"
    assert headers[limit] == "0"
    time.sleep(int(headers["retry-after-ms"]) / 1000)
    assert len(driver.turn(False).calls) == 1  # a new window: served, and the step it was refused
    attempts = driver.provider.events("attempt")
    assert [(a["status"], a["fault"], a["step"]) for a in attempts] == [
        (200, None, 0),
        (429, "quota", None),
        (200, None, 1),
    ]
    assert 0 < attempts[1]["played"]["retry_after_seconds"] <= 0.6
    error = attempts[1]["response"]
    assert (
        (error["error"]["type"] == "rate_limit_error")
        if protocol == "messages"
        else (error["error"]["code"] == "rate_limit_exceeded")
    )


def test_a_quota_window_opens_with_the_first_request_served_after_the_last_one_ended() -> None:
    now = [0.0]
    window = QuotaWindow(2, 10.0, lambda: now[0])
    assert [window.admit(), window.admit()] == [None, None]
    now[0] = 4.0
    assert window.admit() == 6.0
    now[0] = 9.5
    assert window.admit() == 0.5
    now[0] = 10.0
    assert window.admit() is None  # the window passed: a new one opens here
    now[0] = 11.0
    assert [window.admit(), window.admit()] == [None, 9.0]


@pytest.mark.parametrize("stream", MODES, ids=["json", "sse"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_not_json_is_a_200_html_page_no_sdk_can_read(drive: Any, protocol: str, stream: bool) -> None:
    driver = _after_first_tool(drive, protocol, {"attempt": 1, "kind": "not_json"})
    reply = _raw(driver, stream)
    # Not JSON: the SDKs hand back the page as text (a plain reply) or find no event in it (a stream).
    assert reply == (fault_not_json.PAGE if not stream else [])
    attempt = _fault_attempt(driver.provider)
    assert (attempt["status"], attempt["fault"], attempt["response"], attempt["response_id"]) == (
        200,
        "not_json",
        None,
        None,
    )
    assert attempt["played"] == {"body": fault_not_json.PAGE}
    assert driver.turn(stream).text == "PROBE_DONE"


@pytest.mark.parametrize("stream", MODES, ids=["json", "sse"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_length_cut_ends_the_answer_half_way_with_the_protocols_limit_finish(
    drive: Any, protocol: str, stream: bool
) -> None:
    driver = _after_first_tool(drive, protocol, {"attempt": 1, "kind": "length_cut"})
    finish = {"chat": "length", "responses": "incomplete", "messages": "max_tokens"}[protocol]
    if stream and protocol != "messages":
        # The openai SDK's assembling helpers refuse such a stream (LengthFinishReasonError; "no response.completed
        # event"), as they refuse the real one: read the events as they came.
        events = _raw(driver, stream)
        cut = _cut_stream(protocol, events)
    else:
        turn = driver.turn(stream)
        cut = (turn.response_id, turn.finish, turn.text, turn.calls)
    assert cut[1:] == (finish, "PROBE", [])
    whole = driver.turn(stream)
    assert (whole.text, whole.finish in ("stop", "completed", "end_turn")) == ("PROBE_DONE", True)
    attempt = _fault_attempt(driver.provider)
    assert (attempt["status"], attempt["finish_reason"], attempt["answer"], attempt["step"]) == (
        200,
        finish,
        "PROBE",
        1,
    )
    assert attempt["response_id"] == cut[0] and attempt["usage"] is not None
    assert attempt["played"] == {"finish_reason": finish}
    if protocol == "responses":
        reply = attempt["response"]
        assert reply["incomplete_details"] == {"reason": "max_output_tokens"}
        if stream:
            assert json.loads(attempt["sse_events"][-1])["type"] == "response.incomplete"


def _cut_stream(protocol: str, events: list[Any]) -> tuple[str, str | None, str, list[Any]]:
    """(response id, finish, text, calls) of a Chat or Responses stream read event by event."""
    if protocol == "chat":
        choices = [c.choices[0] for c in events if c.choices]
        text = "".join(c.delta.content or "" for c in choices)
        return events[0].id, choices[-1].finish_reason, text, []
    last = events[-1]
    assert last.type == "response.incomplete", last.type
    return last.response.id, last.response.status, last.response.output_text, []


@pytest.mark.parametrize("stream", MODES, ids=["json", "sse"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_args_truncated_sends_arguments_no_parser_can_read_under_an_ordinary_finish(
    drive: Any, protocol: str, stream: bool
) -> None:
    driver: Driver = drive(protocol, script=TWO_STEPS, faults=[{"attempt": 0, "kind": "args_truncated"}])
    reply = _raw(driver, stream)
    (malformed,) = driver.provider.events("tool_call")
    sent = malformed["arguments_text"]
    assert malformed["malformed"] is True and json.dumps(malformed["arguments"], separators=(",", ":"))[:-2] == sent
    with pytest.raises(ValueError):
        json.loads(sent)
    assert _arguments_of(protocol, stream, reply) == sent
    attempt = _fault_attempt(driver.provider)
    finish = {"chat": "stop", "responses": "completed", "messages": "tool_use"}[protocol]
    assert (attempt["status"], attempt["finish_reason"], attempt["fault"]) == (200, finish, "args_truncated")
    assert attempt["played"] == {"cut_arguments": {malformed["tool_call_id"]: sent}}
    # Not issued: the next request needs no result for it, and gets the step again with a fresh call.
    again = driver.turn(stream)
    assert len(again.calls) == 1 and again.calls[0]["id"] != malformed["tool_call_id"]
    run_command(again.calls[0]["arguments"].get("command", again.calls[0]["arguments"].get("cmd")))
    driver.provider.addon.done()
    markers = {m["tool_call_id"]: m["present"] for m in driver.provider.events("marker")}
    assert markers == {malformed["tool_call_id"]: False}  # looked for at the end: never run


def _arguments_of(protocol: str, stream: bool, reply: Any) -> str:
    """The arguments text the SDK received, joined from its deltas for a stream."""
    if protocol == "chat":
        if not stream:
            return str(reply.choices[0].message.tool_calls[0].function.arguments)
        return "".join(
            c.choices[0].delta.tool_calls[0].function.arguments or ""
            for c in reply
            if c.choices and c.choices[0].delta.tool_calls
        )
    if protocol == "responses":
        if not stream:
            return str(reply.output[0].arguments)
        return "".join(e.delta for e in reply if e.type == "response.function_call_arguments.delta")
    if not stream:
        return str(reply.content[0].input)  # a string: JSON Messages carries no unclosed object
    return "".join(e.delta.partial_json for e in reply if e.type == "content_block_delta")


@pytest.mark.parametrize("stream", MODES, ids=["json", "sse"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_sse_malformed_breaks_one_events_json_and_the_stream_ends_normally(
    drive: Any, protocol: str, stream: bool
) -> None:
    driver = _after_first_tool(drive, protocol, {"attempt": 1, "kind": "sse_malformed"})
    with pytest.raises(ValueError):  # json.JSONDecodeError, from every SDK's stream and body parser
        _raw(driver, stream)
    attempt = _fault_attempt(driver.provider)
    assert (attempt["status"], attempt["ended"], attempt["finish_reason"], attempt["usage"]) == (
        200,
        "complete",
        None,
        None,
    )
    if stream:
        index = attempt["played"]["malformed_event"]
        events = attempt["sse_events"]
        with pytest.raises(ValueError):
            json.loads(events[index])
        assert all(json.loads(e) for n, e in enumerate(events) if n != index and e != "[DONE]")
        # Responses repeats every piece in later events: there the event broken is the one that completes it.
        assert index == (len(events) - 1 if protocol == "responses" else len(events) // 2)
        if protocol == "responses":
            assert events[index].startswith('{"type":"response.completed"')
    else:
        assert set(attempt["played"]) == {"removed_bytes"}
    assert driver.turn(stream).text == "PROBE_DONE"


@pytest.mark.parametrize("stream", MODES, ids=["json", "sse"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_error_event_is_each_protocols_error_inside_a_200(drive: Any, protocol: str, stream: bool) -> None:
    driver = _after_first_tool(drive, protocol, {"attempt": 1, "kind": "error_event"})
    if protocol == "responses":
        reply = _raw(driver, stream)
        failed = reply[-1].response if stream else reply
        assert (failed.status, failed.error.code) == ("failed", "server_error")
        if stream:
            assert reply[-1].type == "response.failed" and any(e.type == "response.output_text.delta" for e in reply)
    elif protocol == "messages" and not stream:
        reply = _raw(driver, stream)
        assert reply.type == "error" and reply.error == {"type": "overloaded_error", "message": "Overloaded"}  # type: ignore[attr-defined]
    elif protocol == "messages":
        with pytest.raises(anthropic.APIStatusError) as raised:
            _raw(driver, stream)
        assert raised.value.status_code == 200
        assert raised.value.body == {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    elif not stream:
        reply = _raw(driver, stream)  # the SDK builds a completion without choices around the error it was given
        assert not reply.choices and reply.error["type"] == "server_error"  # type: ignore[attr-defined]
    else:
        with pytest.raises(openai.APIError) as error:
            _raw(driver, stream)
        assert isinstance(error.value.body, dict) and error.value.body["type"] == "server_error"
    attempt = _fault_attempt(driver.provider)
    assert (attempt["status"], attempt["fault"], attempt["finish_reason"]) == (200, "error_event", None)
    assert attempt["played"]["error"] == attempt["response"]
    if stream:
        assert attempt["played"]["error_event"] == len(attempt["sse_events"]) - 1
        assert "[DONE]" not in attempt["sse_events"]
    assert driver.turn(stream).text == "PROBE_DONE"
