"""End-to-end runs of the reference agent against a scripted in-process provider, schema-checked."""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from probe_reference import __version__
from probe_reference.cli import main
from probe_reference.modes import MODES
from probe_reference.tools import run_bash

from tests.unit.reference_agent.fake_provider import (
    Reply,
    chunk,
    completion,
    json_reply,
    serve,
    sse_reply,
    usage,
)
from tests.unit.reference_agent.helpers import NULL_TOKENS, REFERENCE_DIR, run_agent, validate

TOOL = ("call_1", "bash", json.dumps({"command": "printf hi; exit 3"}))
RATE_LIMITED = {"error": {"message": "slow down", "type": "rate_limit_error", "code": "rate_limited"}}


def test_tool_call_then_final_answer(tmp_path: Path) -> None:
    script = [
        completion("chatcmpl-1", tool_calls=[TOOL], usage=usage(11, 5, reasoning=2, cached=0)),
        completion("chatcmpl-2", content="The command printed hi.", usage=usage(23, 7)),
    ]
    with serve(script) as provider:
        code, rollout = run_agent(provider.url, tmp_path)
    assert code == 0
    assert not provider.violations and provider.remaining == 0
    # The tool result the model saw is the real, unstripped output of the command.
    tool_message = provider.received[1].body["messages"][-1]
    assert tool_message == {"role": "tool", "tool_call_id": "call_1", "content": "hi"}
    assert provider.received[0].body["tools"][0]["function"]["name"] == "bash"

    assert provider.received[0].path == "/v1/chat/completions"
    assert provider.received[0].headers["authorization"] == "Bearer sk-test"
    calls = rollout["model_calls"]
    assert {c["protocol"] for c in calls} == {"chat"}
    assert [(c["model_call_id"], c["status_code"], c["response_id"]) for c in calls] == [
        ("mc-1", 200, "chatcmpl-1"),
        ("mc-2", 200, "chatcmpl-2"),
    ]
    assert calls[0]["token_stats"] == {
        "prompt": 11,
        "completion": 5,
        "reasoning": 2,
        "total": 16,
        "cached": 0,
    }
    assert calls[0]["finish_reason"] == "tool_calls" and calls[1]["finish_reason"] == "stop"
    assert [s["model_call_refs"] for s in rollout["steps"]] == [["mc-1"], ["mc-2"]]
    assert rollout["tool_calls"] == [
        {
            "tool_call_id": "call_1",
            "tool_name": "bash",
            "arguments": {"command": "printf hi; exit 3"},
            "status": "failed",
            "exit_code": 3,
            "output": "hi",
            "invocation_id": rollout["invocations"][0]["invocation_id"],
            "step_no": 1,
        }
    ]
    conversation = rollout["invocations"][0]["conversation"]
    assert [m["role"] for m in conversation] == ["system", "user", "assistant", "tool", "assistant"]
    assert conversation[1]["content"] == "say hi"
    assert conversation[2]["tool_calls"] == [
        {"tool_call_id": "call_1", "tool_name": "bash", "arguments": {"command": "printf hi; exit 3"}}
    ]
    assert conversation[3] == {"role": "tool", "tool_call_id": "call_1", "content": "hi"}
    assert rollout["outcome"] == {
        "final_answer": "The command printed hi.",
        "status": "completed",
        "failure_kind": None,
        "failure_reason": None,
    }
    assert rollout["task_id"] == "t-1"


def test_429_then_success_records_both_attempts(tmp_path: Path) -> None:
    script = [
        json_reply(429, RATE_LIMITED, {"Retry-After": "0"}),
        completion("chatcmpl-ok", content="done", usage=usage(3, 1)),
    ]
    with serve(script) as provider:
        code, rollout = run_agent(provider.url, tmp_path)
    assert code == 0 and len(provider.received) == 2
    first, second = rollout["model_calls"]
    assert first["status_code"] == 429 and first["error_category"] == "http_429"
    assert first["error"] == RATE_LIMITED
    assert first["response_id"] is None and first["token_stats"] == NULL_TOKENS
    assert second["status_code"] == 200 and second["response_id"] == "chatcmpl-ok"
    # The SDK's retry stays an attempt of the same step.
    assert [s["model_call_refs"] for s in rollout["steps"]] == [["mc-1", "mc-2"]]
    assert rollout["outcome"]["final_answer"] == "done"


def test_terminal_400_is_recorded_and_exits_nonzero(tmp_path: Path) -> None:
    body = {"error": {"message": "bad request: context too long", "type": "invalid_request_error"}}
    with serve([json_reply(400, body)]) as provider:
        code, rollout = run_agent(provider.url, tmp_path)
    assert code == 1 and len(provider.received) == 1
    (call,) = rollout["model_calls"]
    assert (call["status_code"], call["error_category"], call["error"]) == (400, "http_400", body)
    assert [s["model_call_refs"] for s in rollout["steps"]] == [["mc-1"]]
    outcome = rollout["outcome"]
    assert outcome["status"] == "error" and outcome["failure_kind"] == "model_error"
    assert outcome["final_answer"] is None
    assert outcome["failure_reason"].startswith("Error code: 400")
    assert "context too long" in outcome["failure_reason"]


def test_exhausted_retries_record_every_attempt(tmp_path: Path) -> None:
    fail = json_reply(500, {"error": {"message": "boom"}}, {"retry-after-ms": "1"})
    with serve([fail, fail, fail]) as provider:
        code, rollout = run_agent(provider.url, tmp_path)
    assert code == 1 and len(provider.received) == 3  # the SDK's default: 2 retries
    assert [c["error_category"] for c in rollout["model_calls"]] == ["http_500"] * 3
    assert [s["model_call_refs"] for s in rollout["steps"]] == [["mc-1", "mc-2", "mc-3"]]
    assert rollout["outcome"]["failure_kind"] == "model_error"


def test_streaming_tool_call_and_answer(tmp_path: Path) -> None:
    opening = {"index": 0, "id": "call_s", "type": "function", "function": {"name": "bash", "arguments": ""}}
    start = {"role": "assistant", "tool_calls": [opening]}
    part_1 = {"tool_calls": [{"index": 0, "function": {"arguments": '{"command": "printf hi;'}}]}
    part_2 = {"tool_calls": [{"index": 0, "function": {"arguments": ' exit 3"}'}}]}
    turn_1 = [
        chunk("chatcmpl-s1", start),
        chunk("chatcmpl-s1", part_1),
        chunk("chatcmpl-s1", part_2),
        chunk("chatcmpl-s1", {}, "tool_calls"),
        {**chunk("chatcmpl-s1"), "usage": usage(9, 4, reasoning=1, cached=3)},
    ]
    turn_2 = [
        chunk("chatcmpl-s2", {"role": "assistant", "content": "Do"}),
        chunk("chatcmpl-s2", {"content": "ne."}),
        chunk("chatcmpl-s2", {}, "stop"),
    ]  # no usage chunk: the second call's counts stay unknown
    with serve([sse_reply(turn_1), sse_reply(turn_2)]) as provider:
        code, rollout = run_agent(provider.url, tmp_path, "--stream")
    assert code == 0
    request = provider.received[0].body
    assert request["stream"] is True and request["stream_options"] == {"include_usage": True}
    sent = provider.received[1].body["messages"]
    assert sent[-2]["tool_calls"][0]["function"]["arguments"] == '{"command": "printf hi; exit 3"}'
    assert sent[-1] == {"role": "tool", "tool_call_id": "call_s", "content": "hi"}
    first, second = rollout["model_calls"]
    assert (first["response_id"], first["finish_reason"]) == ("chatcmpl-s1", "tool_calls")
    assert first["token_stats"] == {"prompt": 9, "completion": 4, "reasoning": 1, "total": 13, "cached": 3}
    assert (second["response_id"], second["finish_reason"]) == ("chatcmpl-s2", "stop")
    assert second["token_stats"] == NULL_TOKENS
    assert rollout["tool_calls"][0]["exit_code"] == 3 and rollout["tool_calls"][0]["output"] == "hi"
    assert rollout["outcome"]["final_answer"] == "Done."


def test_usage_absent_or_partial_stays_null(tmp_path: Path) -> None:
    partial = {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
    script = [
        completion("chatcmpl-a", tool_calls=[TOOL]),  # no usage at all
        completion("chatcmpl-b", content="ok", usage=partial),  # no details
    ]
    with serve(script) as provider:
        code, rollout = run_agent(provider.url, tmp_path)
    assert code == 0
    first, second = rollout["model_calls"]
    assert first["token_stats"] == NULL_TOKENS
    assert second["token_stats"] == {
        "prompt": 5,
        "completion": 2,
        "reasoning": None,
        "total": 7,
        "cached": None,
    }


def test_cut_stream_is_a_failed_attempt(tmp_path: Path) -> None:
    events = [chunk("chatcmpl-c", {"role": "assistant", "content": "partial answer " * 20})] * 4
    with serve([sse_reply(events, cut=True)]) as provider:
        code, rollout = run_agent(provider.url, tmp_path, "--stream", "--stream-retries", "0")
    assert code == 1 and len(provider.received) == 1  # a broken stream is not retried by the SDK
    (call,) = rollout["model_calls"]
    assert (call["status_code"], call["error_category"], call["response_id"]) == (200, "stream_cut", None)
    assert "RemoteProtocolError" in call["error"]
    assert rollout["outcome"]["status"] == "error" and rollout["outcome"]["failure_kind"] == "model_error"


def test_cut_stream_is_asked_again_within_the_step(tmp_path: Path) -> None:
    events = [chunk("chatcmpl-c", {"role": "assistant", "content": "partial answer " * 20})] * 4
    done = [chunk("chatcmpl-ok", {"role": "assistant", "content": "done"}, "stop")]
    with serve([sse_reply(events, cut=True), sse_reply(events, cut=True), sse_reply(done)]) as provider:
        code, rollout = run_agent(provider.url, tmp_path, "--stream")
    assert code == 0 and len(provider.received) == 3
    # Every ask is the same request: the broken reply added nothing to the history.
    assert provider.received[0].body == provider.received[1].body == provider.received[2].body
    calls = rollout["model_calls"]
    assert [(c["status_code"], c["error_category"], c["response_id"]) for c in calls] == [
        (200, "stream_cut", None),
        (200, "stream_cut", None),
        (200, None, "chatcmpl-ok"),
    ]
    assert [s["model_call_refs"] for s in rollout["steps"]] == [["mc-1", "mc-2", "mc-3"]]
    assert rollout["outcome"]["final_answer"] == "done"


def test_broken_streams_give_up_after_the_retries(tmp_path: Path) -> None:
    events = [chunk("chatcmpl-c", {"role": "assistant", "content": "partial answer " * 20})] * 4
    with serve([sse_reply(events, cut=True)] * 2) as provider:
        code, rollout = run_agent(provider.url, tmp_path, "--stream", "--stream-retries", "1")
    assert code == 1 and len(provider.received) == 2 and not provider.violations
    assert [c["error_category"] for c in rollout["model_calls"]] == ["stream_cut", "stream_cut"]
    assert rollout["outcome"]["failure_kind"] == "model_error"


def test_silent_stream_times_out_and_is_asked_again(tmp_path: Path) -> None:
    """harness_deadline: the status line arrives, then nothing; the per-request timeout ends the wait."""
    late = sse_reply([chunk("chatcmpl-late", {"role": "assistant", "content": "late"}, "stop")]).body
    silent = Reply(status=200, body=late, content_type="text/event-stream", withhold_body_s=10)
    done = sse_reply([chunk("chatcmpl-ok", {"role": "assistant", "content": "done"}, "stop")])
    with serve([silent, done]) as provider:
        code, rollout = run_agent(provider.url, tmp_path, "--stream", "--timeout", "0.3")
    assert code == 0 and len(provider.received) == 2
    first, second = rollout["model_calls"]
    assert (first["status_code"], first["error_category"], first["response_id"]) == (200, "timeout", None)
    assert "ReadTimeout" in first["error"]
    assert second["response_id"] == "chatcmpl-ok"
    assert [s["model_call_refs"] for s in rollout["steps"]] == [["mc-1", "mc-2"]]


def test_error_event_in_stream_keeps_payload_and_is_asked_again(tmp_path: Path) -> None:
    error = {"message": "overloaded", "type": "server_error"}
    events = [chunk("chatcmpl-e", {"role": "assistant", "content": "x"}), {"error": error}]
    done = sse_reply([chunk("chatcmpl-ok", {"role": "assistant", "content": "done"}, "stop")])
    with serve([sse_reply(events), done]) as provider:
        code, rollout = run_agent(provider.url, tmp_path, "--stream")
    assert code == 0 and len(provider.received) == 2
    failed, ok = rollout["model_calls"]
    assert (failed["status_code"], failed["error_category"], failed["error"]) == (200, "stream_error", error)
    assert ok["response_id"] == "chatcmpl-ok" and rollout["outcome"]["final_answer"] == "done"


def test_timeout_then_success(tmp_path: Path) -> None:
    slow = Reply(status=200, body=completion("chatcmpl-late", content="late").body, delay_s=10)
    with serve([slow, completion("chatcmpl-t", content="ok")]) as provider:
        code, rollout = run_agent(provider.url, tmp_path, "--timeout", "0.3")
    assert code == 0
    first, second = rollout["model_calls"]
    assert (first["status_code"], first["error_category"]) == (None, "timeout")
    assert second["response_id"] == "chatcmpl-t"


def test_connection_refused_every_attempt_recorded(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    code, rollout = run_agent(f"http://127.0.0.1:{port}/v1", tmp_path)
    assert code == 1
    assert [(c["status_code"], c["error_category"]) for c in rollout["model_calls"]] == [(None, "connection")] * 3
    assert rollout["outcome"]["failure_reason"] == "Connection error."


def test_max_steps_and_unrunnable_calls(tmp_path: Path) -> None:
    bad = [("call_a", "bash", "not json"), ("call_b", "python", '{"code": "1"}')]
    script = [completion("chatcmpl-1", tool_calls=bad), completion("chatcmpl-2", tool_calls=[TOOL])]
    with serve(script) as provider:
        code, rollout = run_agent(provider.url, tmp_path, "--max-steps", "2")
    assert code == 1 and provider.remaining == 0
    records = {t["tool_call_id"]: t for t in rollout["tool_calls"]}
    assert records["call_a"]["arguments"] == "not json"  # not JSON: recorded raw
    assert (records["call_a"]["status"], records["call_a"]["exit_code"]) == ("failed", None)
    assert records["call_b"]["output"].startswith("error: unknown tool 'python'")
    assert provider.received[1].body["messages"][-2]["content"] == records["call_a"]["output"]
    assert rollout["outcome"]["failure_kind"] == "max_steps"


def test_streamed_429_body_is_kept(tmp_path: Path) -> None:
    script = [
        json_reply(429, RATE_LIMITED, {"Retry-After": "0"}),
        sse_reply([chunk("chatcmpl-r", {"role": "assistant", "content": "ok"}, "stop")]),
    ]
    with serve(script) as provider:
        code, rollout = run_agent(provider.url, tmp_path, "--stream")
    assert code == 0
    first, second = rollout["model_calls"]
    assert (first["error_category"], first["error"]) == ("http_429", RATE_LIMITED)
    assert (second["response_id"], second["finish_reason"]) == ("chatcmpl-r", "stop")


def _signal_state(pid: int) -> str:
    """The kernel's view of a process's signals and threads: why a signal it was sent may not have acted."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError as exc:
        return f"no status: {exc}"
    keep = ("State", "Threads", "SigQ", "SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt")
    return "; ".join(line for line in lines if line.split(":")[0] in keep)


def sigterm_after(argv: list[str], marker: bytes, rollout_path: Path, settle_s: float = 0.0) -> dict[str, Any]:
    """Run the CLI as a process, SIGTERM it once `marker` shows on stderr; return its validated rollout.

    If it outlives the SIGTERM, the failure says why: its signal state from /proc, then the Python stack of
    every thread (faulthandler, dumped on SIGABRT).
    """
    env = {**os.environ, "PYTHONPATH": str(REFERENCE_DIR), "PYTHONFAULTHANDLER": "1"}
    base = ["--task", "t", "--rollout", str(rollout_path), "--api-key", "k"]
    proc = subprocess.Popen([sys.executable, "-m", "probe_reference", *base, *argv], stderr=subprocess.PIPE, env=env)
    assert proc.stderr is not None
    seen = b""
    deadline = time.monotonic() + 20
    while marker not in seen and time.monotonic() < deadline and proc.poll() is None:
        if select.select([proc.stderr], [], [], 0.1)[0]:
            seen += os.read(proc.stderr.fileno(), 4096)
    try:
        assert marker in seen, seen
        time.sleep(settle_s)
        proc.send_signal(signal.SIGTERM)
        try:
            _, rest = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            state = _signal_state(proc.pid)
            proc.send_signal(signal.SIGABRT)
            _, dump = proc.communicate(timeout=10)
            raise AssertionError(
                f"alive 20 s after SIGTERM; {state}\n{(seen + dump).decode(errors='replace')}"
            ) from None
    finally:
        # A failure here must not leave the agent running, or its pipe open for a later test to trip over.
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        proc.stderr.close()
    assert proc.returncode == 143, seen + rest
    rollout: dict[str, Any] = json.loads(rollout_path.read_text())
    validate(rollout)
    return rollout


def test_sigterm_during_a_model_call_records_it(tmp_path: Path) -> None:
    slow = Reply(status=200, body=completion("chatcmpl-never", content="late").body, delay_s=30)
    with serve([slow]) as provider:
        rollout = sigterm_after(["--base-url", provider.url], b"POST", tmp_path / "rollout.json")
    (call,) = rollout["model_calls"]
    assert (call["status_code"], call["error_category"]) == (None, "interrupted")
    assert [s["model_call_refs"] for s in rollout["steps"]] == [["mc-1"]]
    assert rollout["outcome"]["failure_kind"] == "interrupted"


def test_sigterm_while_a_streamed_reply_is_read_records_it(tmp_path: Path) -> None:
    # The status line came (200), the body is withheld: the attempt is under way in the SDK's stream, not the
    # client's request, when SIGTERM comes.
    held = sse_reply([chunk("chatcmpl-held", {"role": "assistant", "content": "late"}, "stop")])
    held = Reply(status=200, body=held.body, content_type=held.content_type, withhold_body_s=30)
    with serve([held]) as provider:
        argv = ["--base-url", provider.url, "--stream"]
        rollout = sigterm_after(argv, b"POST", tmp_path / "rollout.json", settle_s=1.0)
    (call,) = rollout["model_calls"]
    assert (call["status_code"], call["error_category"]) == (200, "interrupted")
    assert call["error"] == "Terminated: received SIGTERM"
    assert rollout["outcome"]["failure_kind"] == "interrupted"


def test_hang_mode_writes_rollout_on_sigterm(tmp_path: Path) -> None:
    argv = ["--mode", "hang", "--base-url", "http://127.0.0.1:9/v1"]
    rollout = sigterm_after(argv, b"mode hang", tmp_path / "rollout.json")
    assert rollout["model_calls"] == [] and rollout["steps"] == []
    assert rollout["outcome"]["status"] == "error" and rollout["outcome"]["failure_kind"] == "interrupted"


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"probe-reference {__version__}\n"


def test_modes_honest_and_hang_do_not_rewrite() -> None:
    assert {"honest", "hang"} <= set(MODES)
    sample: Any = {"outcome": {"status": "completed"}}
    assert MODES["honest"].transform(sample) is sample
    assert MODES["hang"].transform(sample) is sample
    assert MODES["honest"].before_first_call is None and MODES["hang"].before_first_call is not None


def test_bash_output_is_not_stripped_and_timeouts_fail() -> None:
    result = run_bash("printf ' a \\n'; printf 'err\\n' >&2")
    assert (result.output, result.exit_code, result.status) == (" a \nerr\n", 0, "succeeded")
    slow = run_bash("printf before; sleep 10", timeout_s=0.3)
    assert slow.status == "failed" and slow.exit_code is None
    assert slow.output.startswith("before") and "timed out" in slow.output
