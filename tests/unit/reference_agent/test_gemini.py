"""The Gemini protocol, JSON and streamed, through google-genai against the in-process provider; replies are the
proxy's own Gemini codec's, so the agent reads exactly the bytes the scripted provider sends."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from probe_reference.tools import BASH_PARAMETERS

from proxy_addons.gemini import GeminiCodec
from proxy_addons.protocol import IssuedToolCall, ModelRequest, ScriptedReply, Usage
from tests.unit.reference_agent.fake_provider import Reply, json_reply, serve
from tests.unit.reference_agent.helpers import NULL_TOKENS, REFERENCE_DIR, run_agent

COMMAND = {"command": "printf hi; exit 3"}
STREAM = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
CODEC = GeminiCodec()
RATE_LIMITED = CODEC.error_body(429, "slow down", "rate_limit_error", "429")


def reply(response_id: str, *, stream: bool, text: str | None = None, usage: Usage | None = None) -> Reply:
    """A Gemini reply as the proxy renders it: a tool call of COMMAND (id `fc_1`), or `text`."""
    call = IssuedToolCall("fc_1", "bash", COMMAND, COMMAND["command"], "", "", 3, "")
    scripted = ScriptedReply(response_id, () if text is not None else (call,), text, usage)
    request = ModelRequest(stream=stream, stream_usage=True, tools=(), tool_results=())
    rendered = CODEC.render_reply(scripted, request, "probe-model", 0)
    return Reply(body=rendered.body, content_type=rendered.content_type)


def run(provider: Any, tmp_path: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    return run_agent(provider.root, tmp_path, "--protocol", "gemini", *extra)


@STREAM
def test_tool_call_then_final_answer(tmp_path: Path, stream: bool) -> None:
    script = [
        reply("r1", stream=stream, usage=Usage(prompt=11, completion=5, reasoning=2, cached=3)),
        reply(
            "r2",
            stream=stream,
            text="The command printed hi.",
            usage=Usage(prompt=23, completion=7, reasoning=0, cached=0),
        ),
    ]
    with serve(script) as provider:
        code, rollout = run(provider, tmp_path, *(["--stream"] if stream else []))
    assert code == 0 and not provider.violations and provider.remaining == 0
    first, second = provider.received
    method = ":streamGenerateContent?alt=sse" if stream else ":generateContent"
    assert first.path.endswith(f"/models/probe-model{method}") and first.headers["x-goog-api-key"] == "sk-test"
    (declaration,) = first.body["tools"][0]["functionDeclarations"]
    # google-genai 3.6.1 sends this one field under its proto name; the API (and the proxy) take both spellings.
    assert (declaration["name"], declaration["parameters_json_schema"]) == ("bash", BASH_PARAMETERS)
    assert first.body["contents"] == [{"role": "user", "parts": [{"text": "say hi"}]}]
    assert "systemInstruction" in first.body
    assert second.body["contents"][1:] == [
        {"role": "model", "parts": [{"functionCall": {"id": "fc_1", "name": "bash", "args": COMMAND}}]},
        {
            "role": "user",
            "parts": [{"functionResponse": {"id": "fc_1", "name": "bash", "response": {"output": "hi"}}}],
        },
    ]
    calls = rollout["model_calls"]
    assert [(c["protocol"], c["status_code"], c["response_id"], c["finish_reason"]) for c in calls] == [
        ("gemini", 200, "r1", "STOP"),
        ("gemini", 200, "r2", "STOP"),
    ]
    # Google counts thoughts apart from the candidates: the completion holds both, as the witness's does.
    assert calls[0]["token_stats"] == {"prompt": 11, "completion": 5, "reasoning": 2, "total": 16, "cached": 3}
    assert calls[1]["token_stats"] == {"prompt": 23, "completion": 7, "reasoning": 0, "total": 30, "cached": 0}
    (tool,) = rollout["tool_calls"]
    assert (tool["tool_call_id"], tool["arguments"], tool["exit_code"], tool["output"]) == ("fc_1", COMMAND, 3, "hi")
    assert rollout["outcome"]["final_answer"] == "The command printed hi."


@STREAM
def test_usage_left_out_stays_unknown(tmp_path: Path, stream: bool) -> None:
    with serve([reply("r1", stream=stream, text="done")]) as provider:
        code, rollout = run(provider, tmp_path, *(["--stream"] if stream else []))
    assert code == 0 and rollout["model_calls"][0]["token_stats"] == NULL_TOKENS


def test_rate_limits_are_retried_by_the_sdk_and_each_attempt_kept(tmp_path: Path) -> None:
    script = [json_reply(429, RATE_LIMITED), json_reply(429, RATE_LIMITED), reply("r1", stream=False, text="done")]
    with serve(script) as provider:
        code, rollout = run(provider, tmp_path)
    assert code == 0 and provider.remaining == 0
    calls = rollout["model_calls"]
    assert [(c["status_code"], c["error_category"]) for c in calls] == [
        (429, "http_429"),
        (429, "http_429"),
        (200, None),
    ]
    assert calls[0]["error"] == RATE_LIMITED and calls[0]["response_id"] is None
    assert rollout["steps"][0]["model_call_refs"] == [c["model_call_id"] for c in calls]


def test_an_invalid_argument_ends_the_run_unretried(tmp_path: Path) -> None:
    error = CODEC.error_body(400, "scripted invalid request", "invalid_request_error", "400")
    with serve([json_reply(400, error)]) as provider:
        code, rollout = run(provider, tmp_path)
    assert code == 1 and provider.remaining == 0
    (call,) = rollout["model_calls"]
    assert (call["status_code"], call["error"]) == (400, error)
    assert rollout["outcome"]["status"] == "error" and rollout["outcome"]["failure_kind"] == "model_error"


def test_a_cut_stream_is_asked_again_within_the_step(tmp_path: Path) -> None:
    whole = reply("r1", stream=True, text="done")
    cut = Reply(body=whole.body, content_type=whole.content_type, cut=True)
    with serve([cut, reply("r2", stream=True, text="done")]) as provider:
        code, rollout = run(provider, tmp_path, "--stream")
    assert code == 0
    first, second = rollout["model_calls"]
    assert (first["status_code"], first["error_category"], second["response_id"]) == (200, "stream_cut", "r2")
    assert rollout["steps"][0]["model_call_refs"] == [first["model_call_id"], second["model_call_id"]]


def test_no_api_key_sends_nothing(tmp_path: Path) -> None:
    from probe_reference.cli import main

    code = main(["--task", "t", "--protocol", "gemini", "--rollout", str(tmp_path / "rollout.json")])
    rollout = json.loads((tmp_path / "rollout.json").read_text())
    assert code == 1 and rollout["outcome"]["failure_kind"] == "config_error" and rollout["model_calls"] == []


DRIVER = """
import json, sys
from probe_reference.cli import main
code = main(sys.argv[1:])
sdks = sorted(m for m in ("openai", "anthropic", "google.genai") if m in sys.modules)
print(json.dumps({"code": code, "sdks": sdks}))
"""


def test_only_google_genai_is_loaded(tmp_path: Path) -> None:
    with serve([reply("r1", stream=False, text="hi")]) as provider:
        argv = ["--task", "say hi", "--base-url", provider.root, "--api-key", "k", "--protocol", "gemini"]
        proc = subprocess.run(
            [sys.executable, "-c", DRIVER, *argv, "--rollout", str(tmp_path / "rollout.json")],
            capture_output=True,
            text=True,
            timeout=120,
            env={"PYTHONPATH": str(REFERENCE_DIR), "PATH": "/usr/bin:/bin"},
            check=False,
        )
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"code": 0, "sdks": ["google.genai"]}, proc.stderr


def test_a_wait_asked_in_retryinfo_is_waited_and_recorded(tmp_path: Path) -> None:
    from proxy_addons.gemini import with_retry_info

    limited = with_retry_info(RATE_LIMITED, 1.2)
    with serve([json_reply(429, limited), reply("r1", stream=False, text="done")]) as provider:
        code, rollout = run(provider, tmp_path)
    assert code == 0 and provider.remaining == 0
    first, second = rollout["model_calls"]
    # Google's wait, not the SDK-style half-second backoff, and the record says so.
    assert first["retry_delay_ms"] == 1200
    assert _seconds(second["started_at"]) - _seconds(first["completed_at"]) >= 1.2


def test_impatient_retries_at_once_on_gemini_too(tmp_path: Path) -> None:
    # The dialog's own retries are off where the agent retries itself (mode impatient): with them on, the 3 s that
    # RetryInfo asked were waited, and the mode lied about nothing on Gemini.
    from proxy_addons.gemini import with_retry_info

    limited = with_retry_info(RATE_LIMITED, 3.0)
    with serve([json_reply(429, limited), reply("r1", stream=False, text="done")]) as provider:
        code, rollout = run(provider, tmp_path, "--mode", "impatient")
    assert code == 0 and provider.remaining == 0
    first, second = rollout["model_calls"]
    assert first["retry_delay_ms"] == 200.0
    assert _seconds(second["started_at"]) - _seconds(first["completed_at"]) < 3.0


def _seconds(stamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _altered(kind: str, stream: bool, text: str | None) -> Reply:
    from proxy_addons import fault_replies

    call = IssuedToolCall("fc_1", "bash", COMMAND, COMMAND["command"], "", "", 3, "")
    scripted = ScriptedReply("rx", () if text is not None else (call,), text, Usage(11, 5, 2, 3))
    request = ModelRequest(stream=stream, stream_usage=True, tools=(), tool_results=())
    rendered = fault_replies.alter_reply(kind, "gemini", CODEC.render_reply(scripted, request, "probe-model", 0))
    return Reply(body=rendered.rendered.body, content_type=rendered.rendered.content_type)


@STREAM
def test_an_answer_cut_at_max_tokens_is_reported_as_truncated(tmp_path: Path, stream: bool) -> None:
    with serve([_altered("length_cut", stream, "The whole answer")]) as provider:
        code, rollout = run(provider, tmp_path, *(["--stream"] if stream else []))
    assert code == 1
    assert rollout["outcome"]["failure_kind"] == "truncated" and "MAX_TOKENS" in rollout["outcome"]["failure_reason"]


@STREAM
def test_a_call_that_did_not_parse_is_recorded_as_its_reply_and_asked_again_next_step(
    tmp_path: Path, stream: bool
) -> None:
    # MALFORMED_FUNCTION_CALL is a whole reply (its id, its usage) with the call dropped: the proxy witnesses it as a
    # reply, so a record of it as a failed attempt retried within its step would join to nothing on the wire.
    with serve([_altered("args_truncated", stream, None), reply("r2", stream=stream, text="done")]) as provider:
        code, rollout = run(provider, tmp_path, *(["--stream"] if stream else []))
    assert code == 0 and provider.remaining == 0 and rollout["outcome"]["final_answer"] == "done"
    first, second = rollout["model_calls"]
    assert (first["status_code"], first["error_category"], first["response_id"]) == (200, None, "rx")
    assert first["finish_reason"] == "MALFORMED_FUNCTION_CALL" and first["token_stats"]["prompt"] == 11
    assert [s["model_call_refs"] for s in rollout["steps"]] == [[first["model_call_id"]], [second["model_call_id"]]]
    assert rollout["tool_calls"] == []  # the dropped call was never run
    # The empty turn is not sent back (the API refuses a content without parts): the same history is asked again.
    assert provider.received[1].body["contents"] == provider.received[0].body["contents"]
    assert rollout["invocations"][0]["conversation"][2] == {"role": "assistant", "content": None}


@STREAM
@pytest.mark.parametrize("kind", ["error_event", "sse_malformed"])
def test_an_unusable_gemini_reply_is_asked_again_within_the_step(tmp_path: Path, stream: bool, kind: str) -> None:
    with serve([_altered(kind, stream, None), reply("r2", stream=stream, text="done")]) as provider:
        code, rollout = run(provider, tmp_path, *(["--stream"] if stream else []))
    assert code == 0 and provider.remaining == 0 and rollout["outcome"]["final_answer"] == "done"
    first, second = rollout["model_calls"]
    assert first["status_code"] == 200 and first["error_category"] is not None and second["response_id"] == "r2"
    assert rollout["steps"][0]["model_call_refs"] == [first["model_call_id"], second["model_call_id"]]
    assert rollout["tool_calls"] == []  # the dropped call was never run


@STREAM
def test_an_html_page_is_asked_again_within_the_step(tmp_path: Path, stream: bool) -> None:
    from proxy_addons import fault_not_json

    page = Reply(body=fault_not_json.PAGE.encode(), content_type=fault_not_json.CONTENT_TYPE)
    with serve([page, reply("r2", stream=stream, text="done")]) as provider:
        code, rollout = run(provider, tmp_path, *(["--stream"] if stream else []))
    assert code == 0 and rollout["outcome"]["final_answer"] == "done"
    first, second = rollout["model_calls"]
    assert (first["status_code"], first["error_category"], second["response_id"]) == (200, "invalid_response", "r2")


WINDOW = 1000


def test_near_the_window_it_summarizes_without_tools_and_records_the_compaction(tmp_path: Path) -> None:
    near = Usage(prompt=950, completion=5, reasoning=0, cached=0)
    script = [
        reply("r1", stream=False, usage=near),
        reply("r2", stream=False, usage=near),
        reply(
            "r-sum", stream=False, text="ran printf twice", usage=Usage(prompt=40, completion=4, reasoning=0, cached=0)
        ),
        reply("r3", stream=False, text="done", usage=near),
    ]
    with serve(script) as provider:
        provider.models["probe-model"] = {"name": "models/probe-model", "inputTokenLimit": WINDOW}
        code, rollout = run(provider, tmp_path)
    assert code == 0 and provider.remaining == 0 and provider.violations == []
    summary_request = provider.received[2].body
    assert "tools" not in summary_request
    assert summary_request["contents"][-1]["parts"][0]["text"].startswith("Summarize")
    # After the summary: the task, the summary in place of the first exchange, then the last exchange.
    after = provider.received[3].body["contents"]
    assert [c["role"] for c in after] == ["user", "user", "model", "user"]
    assert after[1]["parts"][0]["text"].endswith("ran printf twice")
    assert "functionResponse" in after[3]["parts"][0]
    [compaction] = rollout["compactions"]
    assert compaction["step_no"] == 3 and compaction["model_call_refs"] == ["mc-3"]
    assert [s["model_call_refs"] for s in rollout["steps"]] == [["mc-1"], ["mc-2"], ["mc-4"]]


def test_without_a_known_window_it_never_compacts(tmp_path: Path) -> None:
    near = Usage(prompt=950, completion=5, reasoning=0, cached=0)
    script = [reply("r1", stream=False, usage=near), reply("r2", stream=False, text="done", usage=near)]
    with serve(script) as provider:
        code, rollout = run(provider, tmp_path)
    assert code == 0 and provider.remaining == 0 and "compactions" not in rollout


def test_own_turn_is_sent_as_a_model_turn_and_recorded_as_its_own(tmp_path: Path) -> None:
    from probe_reference.modes import OWN_TURN

    with serve([reply("r1", stream=False, text="done")]) as provider:
        code, rollout = run(provider, tmp_path, "--mode", "own_turn")
    assert code == 0
    assert provider.received[0].body["contents"][1] == {"role": "model", "parts": [{"text": OWN_TURN}]}
    own = rollout["invocations"][0]["conversation"][2]
    assert own == {"role": "assistant", "content": OWN_TURN, "origin": "harness"}
