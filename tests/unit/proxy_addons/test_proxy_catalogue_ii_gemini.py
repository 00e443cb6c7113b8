"""Each scenario of catalogue II played on the Gemini protocol, JSON and streamed, by an honest harness over
google-genai: every fault kind has a rendering of Google's (no UnrenderedFault), the fault is played as scripted and
witnessed as played, the step it altered is served again, and a call the reply dropped is never run."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import MakeProvider
from test_proxy_catalogue_ii import CATALOGUE_II, RETRY_INFO, _scenario, play
from test_proxy_gemini_sdk import GeminiDriver

from proxy_addons import fault_replies
from proxy_addons.gemini import GeminiCodec, retry_delay
from proxy_addons.protocol import ModelRequest, ScriptedReply, Usage


@pytest.fixture
def gemini(make_provider: MakeProvider) -> Iterator[Any]:
    drivers: list[GeminiDriver] = []

    def factory(**scenario: Any) -> GeminiDriver:
        driver = GeminiDriver(make_provider(**scenario))
        drivers.append(driver)
        return driver

    yield factory
    for driver in drivers:
        driver.close()


def _retry_delay(response: dict[str, Any]) -> str:
    (detail,) = [d for d in response["error"]["details"] if d["@type"] == RETRY_INFO]
    return str(detail["retryDelay"])


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("name", CATALOGUE_II)
def test_each_scenario_of_catalogue_ii_is_played_on_gemini(gemini: Any, name: str, stream: bool) -> None:
    document = _scenario(name)
    driver: GeminiDriver = gemini(**document)
    turns, failures = play(driver, stream)
    assert turns[-1].text == "PROBE_DONE", (name, failures)
    attempts = driver.provider.events("attempt")
    assert {a["protocol"] for a in attempts} == {"gemini"}
    faulted = [a for a in attempts if a["fault"]]
    assert faulted and {a["fault"] for a in faulted} == {f["kind"] for f in document["faults"]}
    served = [a["step"] for a in attempts if a["status"] == 200 and not a["fault"]]
    assert served == list(range(len(document["script"])))
    assert driver.provider.events("violation") == []
    first = faulted[0]
    played = first.get("played", {})
    if name == "overloaded_529":
        assert failures == ["503", "503"]
        assert first["response"]["error"] == {
            "code": 503,
            "message": "The model is overloaded. Please try again later.",
            "status": "UNAVAILABLE",
        }
    elif name in ("retry_after", "quota_window"):
        assert failures and set(failures) == {"429"}
        assert first["response"]["error"]["status"] == "RESOURCE_EXHAUSTED"
        # The wait is asked for where Google asks for it, and the witness says what was asked.
        delay = _retry_delay(first["response"])
        assert delay == played["retry_delay"]
        assert float(delay.removesuffix("s")) == played["retry_after_seconds"] > 0
        if name == "quota_window":
            assert "headers" not in played  # Google sends no Retry-After
            assert f"Please retry in {delay}." in first["response"]["error"]["message"]
        else:
            assert delay == "3s"
        retry = attempts[attempts.index(first) + 1]
        assert retry["started_at"] >= first["completed_at"]
    elif name == "length_cut":
        assert first["finish_reason"] == played["finish_reason"] == "MAX_TOKENS"
        assert [t.finish for t in turns] == ["STOP", "MAX_TOKENS", "STOP"]
        assert turns[1].text == first["answer"] == "PROBE_DONE"[:5]
    elif name == "tool_args_truncated":
        assert first["finish_reason"] == played["finish_reason"] == "MALFORMED_FUNCTION_CALL"
        assert failures == ["unusable"]  # an empty candidate: asked again
        (call,) = [c for c in driver.provider.events("tool_call") if c.get("malformed")]
        assert call["not_sent"] is True and "arguments_text" not in call
        assert played["dropped_calls"] == [call["tool_call_id"]]
        sent = first["sse_events"] if stream else [json.dumps(first["response"])]
        assert not any(call["tool_call_id"] in event or "functionCall" in event for event in sent)
    elif name == "sse_malformed":
        assert len(failures) == 1
        if stream:
            index = played["malformed_event"]
            with pytest.raises(ValueError):
                json.loads(first["sse_events"][index])
            assert all(json.loads(e) for n, e in enumerate(first["sse_events"]) if n != index)
        else:
            assert played["removed_bytes"][0] < played["removed_bytes"][1]
    elif name == "stream_error_event":
        error = {"code": 500, "message": played["error"]["error"]["message"], "status": "INTERNAL"}
        assert played["error"] == {"error": error}
        if stream:
            assert failures == ["500"]  # google-genai raises the event's error as an APIError of its code
            assert json.loads(first["sse_events"][played["error_event"]]) == {"error": error}
            assert played["error_event"] >= 1  # some content came first
        else:
            assert failures == ["TypeError"]  # a 200 body with no candidates
    elif name == "body_not_json":
        assert first["status"] == 200 and played["body"].startswith("<!DOCTYPE html>")
        assert failures and failures[0] not in ("200", "unusable")
    malformed = [c for c in driver.provider.events("tool_call") if c.get("malformed")]
    driver.provider.addon.done()
    for call in malformed:
        markers = [m for m in driver.provider.events("marker") if m["tool_call_id"] == call["tool_call_id"]]
        assert markers and not any(m["present"] for m in markers)  # a call never sent was never run
    assert bool(malformed) == (name == "tool_args_truncated")


@pytest.mark.parametrize("kind", sorted(fault_replies.STEP_RENDERERS))
@pytest.mark.parametrize("text", [None, "PROBE_DONE"], ids=["empty", "answer"])
def test_every_altered_gemini_stream_keeps_googles_crlf_framing(kind: str, text: str | None) -> None:
    codec = GeminiCodec()
    request = ModelRequest(stream=True, stream_usage=True, tools=(), tool_results=())
    reply = ScriptedReply(codec.new_response_id(), (), text or "", Usage(100, 7, 2, 3))
    altered = fault_replies.alter_reply(kind, "gemini", codec.render_reply(reply, request, "probe-model", 0))
    frames = altered.rendered.frames
    assert frames and all(f.startswith(b"data: ") and f.endswith(b"\r\n\r\n") for f in frames)
    assert frames[-1].count(b"\r\n\r\n") == 1 and b"".join(frames) == altered.rendered.body


@pytest.mark.parametrize(("seconds", "duration"), [(3, "3s"), (0.6, "0.6s"), (0.6004, "0.601s"), (12.25, "12.25s")])
def test_a_retry_delay_is_a_duration_never_shorter_than_the_wait(seconds: float, duration: str) -> None:
    assert retry_delay(seconds) == duration
