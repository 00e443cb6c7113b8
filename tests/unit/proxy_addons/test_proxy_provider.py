"""The scripted-provider addon driven through mitmproxy hooks: script, faults, guards, witness."""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    BASH_TOOL,
    READ_TOOL,
    MakeProvider,
    Provider,
    assert_valid_witness,
    chat_body,
    execute_tool_calls,
    read_events,
    response_json,
    run_command,
    tool_success_scenario,
    wait_fsync_failed,
)
from mitmproxy import exceptions, hooks
from mitmproxy.addons import anticache, dumper, maplocal, modifyheaders, proxyserver, save
from mitmproxy.test import taddons

from proxy_addons import __version__, interpreter
from proxy_addons.provider import WITNESS_FAILURE_EXIT, ScriptedProvider, prune_inert_addons

USER = {"role": "user", "content": "Run the shell commands you are asked to run."}

CODEX_EXEC_TOOL = {
    "type": "function",
    "function": {
        "name": "exec_command",
        "parameters": {
            "type": "object",
            "properties": {"cmd": {"type": "string"}, "workdir": {"type": "string"}},
            "required": ["cmd"],
        },
    },
}
CODEX_SHELL_TOOL = {
    "type": "function",
    "function": {
        "name": "shell",
        "parameters": {
            "type": "object",
            "properties": {
                "command": {"type": "array", "items": {"type": "string"}},
                "workdir": {"type": "string"},
            },
            "required": ["command"],
        },
    },
}


def status(flow: Any) -> int:
    assert flow.response is not None, "the addon must answer every request"
    return int(flow.response.status_code)


def only_call(reply: dict[str, Any]) -> dict[str, Any]:
    (call,) = reply["choices"][0]["message"]["tool_calls"]
    return call  # type: ignore[no-any-return]


def last_attempt(provider: Provider) -> dict[str, Any]:
    return provider.events("attempt")[-1]


# -- tool calls -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "key", "argv"),
    [(BASH_TOOL, "command", False), (CODEX_EXEC_TOOL, "cmd", False), (CODEX_SHELL_TOOL, "command", True)],
    ids=["bash-command", "codex-cmd", "argv-command"],
)
def test_tool_call_reply_for_each_shell_tool_shape(
    make_provider: MakeProvider, tool: dict[str, Any], key: str, argv: bool
) -> None:
    provider = make_provider()
    flow = provider.chat(chat_body([USER], tools=[READ_TOOL, tool]))
    assert status(flow) == 200
    assert flow.response is not None and flow.response.headers["content-type"] == "application/json"
    reply = response_json(flow)
    choice = reply["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] is None
    call = only_call(reply)
    assert call["id"].startswith("call_") and len(call["id"]) == len("call_") + 32
    assert call["function"]["name"] == tool["function"]["name"]
    arguments = json.loads(call["function"]["arguments"])
    assert list(arguments) == [key]

    (witnessed,) = provider.events("tool_call")
    command = witnessed["command"]
    assert arguments[key] == (["bash", "-lc", command] if argv else command)
    assert witnessed["arguments"] == arguments
    assert witnessed["tool_call_id"] == call["id"]
    assert witnessed["marker_path"] == str(provider.markers / f"{call['id']}.txt")
    assert witnessed["token"].startswith("probe_") and witnessed["token"] in command
    assert witnessed["expected_output"] == witnessed["token"] + "\n"
    result = run_command(arguments[key])
    assert result.returncode == 0 and result.stdout == witnessed["expected_output"]
    assert Path(witnessed["marker_path"]).read_text() == witnessed["token"]

    attempt = last_attempt(provider)
    assert (attempt["kind"], attempt["model_attempt"], attempt["step"], attempt["status"]) == (
        "model",
        0,
        0,
        200,
    )
    assert attempt["response_id"] == reply["id"] and reply["id"].startswith("chatcmpl-")
    assert attempt["response"] == reply and attempt["sse_events"] is None


def test_parallel_tool_calls_in_one_reply(make_provider: MakeProvider) -> None:
    scenario = tool_success_scenario()
    scenario["script"] = [
        {"tool_calls": [{"exit_code": 0}, {"exit_code": 2}]},
        {"final_answer": "PROBE_DONE"},
    ]
    provider = make_provider(scenario)
    reply = response_json(provider.chat(chat_body([USER])))
    calls = reply["choices"][0]["message"]["tool_calls"]
    assert len(calls) == 2 and calls[0]["id"] != calls[1]["id"]
    assert [event["exit_code"] for event in provider.events("tool_call")] == [0, 2]
    history = execute_tool_calls(provider, reply)
    final = provider.chat(chat_body([USER, *history]))
    assert response_json(final)["choices"][0]["message"]["content"] == "PROBE_DONE"


def test_full_tool_success_sequence(make_provider: MakeProvider) -> None:
    provider = make_provider()
    messages: list[dict[str, Any]] = [USER]
    replies = []
    for _ in range(3):
        flow = provider.chat(chat_body(messages), headers={"authorization": "Bearer sk-secret", "x-other": "drop"})
        assert status(flow) == 200
        reply = response_json(flow)
        replies.append(reply)
        if reply["choices"][0]["finish_reason"] == "tool_calls":
            messages = [*messages, *execute_tool_calls(provider, reply)]
    final = replies[-1]["choices"][0]
    assert final["finish_reason"] == "stop" and final["message"] == {
        "role": "assistant",
        "content": "PROBE_DONE",
    }
    assert len({reply["id"] for reply in replies}) == 3

    provider.addon.done()
    events = assert_valid_witness(provider.witness)
    assert [e["event"] for e in events] == [
        "start",
        "tool_call",
        "attempt",
        "tool_result_seen",
        "marker",
        "tool_call",
        "attempt",
        "tool_result_seen",  # only the new call's result: the first one is unchanged
        "marker",
        "attempt",
        "end",
    ]
    start, end = events[0], events[-1]
    assert start["scenario"] == "tool_success" and start["addon_version"] == __version__
    assert start["scenario_sha256"] == hashlib.sha256(provider.scenario_path.read_bytes()).hexdigest()
    assert end == {**end, "attempts": 3, "finished": True}
    seen = [e for e in events if e["event"] == "tool_result_seen"]
    assert all(e["token_present"] for e in seen)
    assert [e["attempt_id"] for e in seen] == ["attempt-1", "attempt-2"]
    assert all(e["present"] and e["matches"] for e in events if e["event"] == "marker")
    attempts = [e for e in events if e["event"] == "attempt"]
    assert [(a["step"], a["model_attempt"], a["finish_reason"]) for a in attempts] == [
        (0, 0, "tool_calls"),
        (1, 1, "tool_calls"),
        (2, 2, "stop"),
    ]
    headers = attempts[0]["headers"]
    assert headers["authorization"] == "sha256:" + hashlib.sha256(b"Bearer sk-secret").hexdigest()
    assert "x-other" not in headers and headers["content-type"] == "application/json"


# -- usage ------------------------------------------------------------------------------------------


def test_usage_differs_per_attempt(make_provider: MakeProvider) -> None:
    provider = make_provider()
    first = response_json(provider.chat(chat_body([USER])))
    history = execute_tool_calls(provider, first)
    second = response_json(provider.chat(chat_body([USER, *history])))
    assert first["usage"] == {
        "prompt_tokens": 100,
        "completion_tokens": 7,
        "total_tokens": 107,
        "prompt_tokens_details": {"cached_tokens": 3},
        "completion_tokens_details": {"reasoning_tokens": 2},
    }
    assert (second["usage"]["prompt_tokens"], second["usage"]["completion_tokens"]) == (110, 8)
    usages = [a["usage"] for a in provider.events("attempt")]
    assert usages == [
        {"prompt": 100, "completion": 7, "reasoning": 2, "total": 107, "cached": 3},
        {"prompt": 110, "completion": 8, "reasoning": 2, "total": 118, "cached": 3},
    ]


def test_usage_false_omits_usage_in_json_and_sse(make_provider: MakeProvider) -> None:
    provider = make_provider(usage=False)
    first = response_json(provider.chat(chat_body([USER])))
    assert "usage" not in first
    history = execute_tool_calls(provider, first)
    flow = provider.chat(chat_body([USER, *history], stream=True, stream_options={"include_usage": True}))
    assert flow.response is not None and flow.response.content is not None
    chunks = [line[len(b"data: ") :] for line in flow.response.content.split(b"\n\n") if line]
    assert chunks[-1] == b"[DONE]"
    assert all("usage" not in json.loads(chunk) for chunk in chunks[:-1])
    assert [a["usage"] for a in provider.events("attempt")] == [None, None]


# -- faults -----------------------------------------------------------------------------------------


def test_429_with_retry_after_then_success(make_provider: MakeProvider) -> None:
    fault = {
        "attempt": 0,
        "kind": "http_error",
        "status": 429,
        "error_type": "rate_limit_error",
        "retry_after": 0,
    }
    provider = make_provider(faults=[fault])
    body = chat_body([USER], stream=True, stream_options={"include_usage": True})
    failed = provider.chat(body)
    assert status(failed) == 429
    assert failed.response is not None
    assert failed.response.headers["retry-after"] == "0"
    assert failed.response.headers["content-type"] == "application/json"  # never SSE for errors
    error = response_json(failed)
    assert error == {"error": {"message": "scripted model failure", "type": "rate_limit_error", "code": "429"}}
    assert "id" not in error

    retried = provider.chat(body)  # the very same request
    assert status(retried) == 200
    attempts = provider.events("attempt")
    assert [(a["kind"], a["model_attempt"], a["status"], a["fault"], a["step"]) for a in attempts] == [
        ("model", 0, 429, "http_error", None),
        ("model", 1, 200, None, 0),
    ]
    assert attempts[0]["response_id"] is None and attempts[0]["usage"] is None
    assert attempts[1]["usage"]["prompt"] == 110  # usage follows the model attempt, faults included


def test_fault_after_tool_call_and_retry_of_same_request(make_provider: MakeProvider) -> None:
    provider = make_provider(faults=[{"attempt": 1, "kind": "http_error", "status": 503, "retry_after": 1.5}])
    first = response_json(provider.chat(chat_body([USER])))
    body = chat_body([USER, *execute_tool_calls(provider, first)])
    failed = provider.chat(body)
    assert status(failed) == 503
    assert failed.response is not None and failed.response.headers["retry-after"] == "1.5"
    retried = provider.chat(body)
    assert status(retried) == 200 and only_call(response_json(retried))
    # The retry repeats the history: its result and marker are not witnessed twice.
    assert len(provider.events("tool_result_seen")) == 1
    assert len(provider.events("marker")) == 1


def test_repeat_fault_answers_every_later_attempt(make_provider: MakeProvider) -> None:
    provider = make_provider(faults=[{"attempt": 1, "kind": "http_error", "status": 500, "repeat": True}])
    first = response_json(provider.chat(chat_body([USER])))
    body = chat_body([USER, *execute_tool_calls(provider, first)])
    assert [status(provider.chat(body)) for _ in range(3)] == [500, 500, 500]
    assert [a["model_attempt"] for a in provider.events("attempt")] == [0, 1, 2, 3]
    provider.addon.done()
    assert provider.events("end")[0]["finished"] is False


# -- auxiliary routes and violations ----------------------------------------------------------------


def test_models_routes_are_auxiliary_and_do_not_consume_the_script(make_provider: MakeProvider) -> None:
    provider = make_provider()
    listing = provider.send("GET", "/v1/models")
    model = {"id": "probe-model", "object": "model", "created": 0, "owned_by": "probe"}
    assert status(listing) == 200 and response_json(listing) == {"object": "list", "data": [model]}
    single = provider.send("GET", "/v1/models/probe-model?x=1")
    assert status(single) == 200 and response_json(single) == model
    assert status(provider.send("GET", "/v1/models/other")) == 404
    reply = provider.chat(chat_body([USER]))
    assert only_call(response_json(reply))
    attempts = provider.events("attempt")
    assert [(a["kind"], a["model_attempt"], a["protocol"]) for a in attempts] == [
        ("auxiliary", None, None),
        ("auxiliary", None, None),
        ("auxiliary", None, None),
        ("model", 0, "chat"),
    ]
    assert [a["attempt_id"] for a in attempts] == ["attempt-0", "attempt-1", "attempt-2", "attempt-3"]
    assert attempts[1]["path"] == "/v1/models/probe-model?x=1"
    assert provider.events("violation") == []


def test_query_string_is_ignored_on_model_routes(make_provider: MakeProvider) -> None:
    provider = make_provider()
    flow = provider.send("POST", "/v1/chat/completions?api-version=1", chat_body([USER]))
    assert status(flow) == 200


def assert_rejected(provider: Provider, flow: Any, code: str, http_status: int) -> dict[str, Any]:
    assert status(flow) == http_status
    error = response_json(flow)["error"]
    assert error["code"] == code and error["type"] == "probe_protocol_error" and error["message"]
    violation = provider.events("violation")[-1]
    attempt = last_attempt(provider)
    assert violation["code"] == code and violation["attempt_id"] == attempt["attempt_id"]
    assert (attempt["kind"], attempt["model_attempt"], attempt["step"], attempt["status"]) == (
        "rejected",
        None,
        None,
        http_status,
    )
    return attempt


def test_unknown_route_is_404_with_violation(make_provider: MakeProvider) -> None:
    provider = make_provider()
    for method, path in [
        ("POST", "/v1/completions"),
        ("GET", "/v1/chat/completions"),
        ("GET", "/v1/responses"),
        ("DELETE", "/v1/models"),
    ]:
        attempt = assert_rejected(provider, provider.send(method, path, {"x": 1}), "unknown_route", 404)
        assert attempt["request"] == {"x": 1} and attempt["protocol"] is None
    assert only_call(response_json(provider.chat(chat_body([USER]))))  # script untouched


def test_no_shell_tool_is_400_and_does_not_consume_the_script(make_provider: MakeProvider) -> None:
    provider = make_provider()
    assert_rejected(provider, provider.chat(chat_body([USER], tools=[READ_TOOL])), "no_shell_tool", 400)
    assert_rejected(provider, provider.chat(chat_body([USER], tools=[])), "no_shell_tool", 400)
    flow = provider.chat(chat_body([USER]))
    assert status(flow) == 200 and last_attempt(provider)["model_attempt"] == 0


@pytest.mark.parametrize("body", [b"{not json", b"", b"[1, 2]", b'{"messages": NaN}', b'{"messages": "x"}'])
def test_bad_request_body_is_400(make_provider: MakeProvider, body: bytes) -> None:
    provider = make_provider()
    attempt = assert_rejected(provider, provider.chat(body), "bad_request", 400)
    assert attempt["protocol"] == "chat"
    assert attempt["request_sha256"] == (hashlib.sha256(body).hexdigest() if body else None)


def test_request_after_final_answer_is_409(make_provider: MakeProvider) -> None:
    scenario = tool_success_scenario()
    scenario["script"] = [{"final_answer": "PROBE_DONE"}]
    provider = make_provider(scenario)
    assert status(provider.chat(chat_body([USER]))) == 200
    assert_rejected(provider, provider.chat(chat_body([USER])), "after_final", 409)


def test_script_without_final_answer_is_exhausted(make_provider: MakeProvider) -> None:
    scenario = tool_success_scenario()
    scenario["script"] = [{"tool_calls": [{}]}]
    provider = make_provider(scenario)
    first = response_json(provider.chat(chat_body([USER])))
    body = chat_body([USER, *execute_tool_calls(provider, first)])
    assert_rejected(provider, provider.chat(body), "script_exhausted", 409)


def test_missing_tool_result_is_409(make_provider: MakeProvider) -> None:
    provider = make_provider()
    reply = response_json(provider.chat(chat_body([USER])))
    history = execute_tool_calls(provider, reply)
    # A side request (title generation, say) without the tool result must not take the next step.
    assert_rejected(provider, provider.chat(chat_body([USER])), "tool_result_missing", 409)
    assert provider.events("marker") == []
    assert status(provider.chat(chat_body([USER, *history]))) == 200
    assert last_attempt(provider)["step"] == 1


def test_missing_or_wrong_marker_is_409_tool_not_executed(make_provider: MakeProvider) -> None:
    provider = make_provider()
    reply = response_json(provider.chat(chat_body([USER])))
    call = only_call(reply)
    (issued,) = provider.events("tool_call")
    # The harness claims a result without running the command.
    history = [reply["choices"][0]["message"], {"role": "tool", "tool_call_id": call["id"], "content": "ok"}]
    assert_rejected(provider, provider.chat(chat_body([USER, *history])), "tool_not_executed", 409)
    assert provider.events("marker")[-1] == {
        **provider.events("marker")[-1],
        "present": False,
        "matches": False,
    }
    seen = provider.events("tool_result_seen")[-1]
    assert seen["output"] == "ok" and seen["token_present"] is False

    marker = Path(issued["marker_path"])
    marker.parent.mkdir(parents=True)
    marker.write_text("forged")
    assert_rejected(provider, provider.chat(chat_body([USER, *history])), "tool_not_executed", 409)
    assert provider.events("marker")[-1]["present"] is True and provider.events("marker")[-1]["matches"] is False

    # Once the command really runs the same conversation continues, and the change is witnessed.
    run_command(issued["command"])
    assert status(provider.chat(chat_body([USER, *history]))) == 200
    assert [(m["present"], m["matches"]) for m in provider.events("marker")] == [
        (False, False),
        (True, False),
        (True, True),
    ]
    assert [a["kind"] for a in provider.events("attempt")] == ["model", "rejected", "rejected", "model"]


def test_tool_result_output_change_is_witnessed_again(make_provider: MakeProvider) -> None:
    provider = make_provider(faults=[{"attempt": 1, "kind": "http_error", "status": 500}])
    reply = response_json(provider.chat(chat_body([USER])))
    history = execute_tool_calls(provider, reply)
    provider.chat(chat_body([USER, *history]))
    history[-1] = {**history[-1], "content": [{"type": "text", "text": "changed"}]}
    provider.chat(chat_body([USER, *history]))
    assert [e["output"] for e in provider.events("tool_result_seen")][1] == "changed"


# -- robustness -------------------------------------------------------------------------------------


def test_internal_error_answers_500_and_keeps_the_script(
    make_provider: MakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider = make_provider()

    def explode(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    with monkeypatch.context() as patch:
        patch.setattr(interpreter.CODECS["chat"], "render_reply", explode)
        attempt = assert_rejected(provider, provider.chat(chat_body([USER])), "internal_error", 500)
    assert "boom" in provider.events("violation")[-1]["detail"]
    assert attempt["protocol"] == "chat"
    flow = provider.chat(chat_body([USER]))
    assert status(flow) == 200 and last_attempt(provider)["step"] == 0


def test_witness_write_failure_kills_traffic_and_exits_loudly(
    make_provider: MakeProvider, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    provider = make_provider()
    before = read_events(provider.witness)

    gate = threading.Event()

    def failing_fsync(fd: int) -> None:
        gate.wait(10)
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr("proxy_addons.witness.os.fsync", failing_fsync)
        # Written and flushed before its reply; the fsync behind it fails (the witness's group commit).
        served = provider.chat(chat_body([USER]))
        gate.set()
        wait_fsync_failed(provider)
    assert status(served) == 200
    assert "FATAL" not in capsys.readouterr().err
    flow = provider.chat(chat_body([USER]))
    assert flow.response is None and flow.error is not None  # killed: nothing is served past a failed fsync
    assert "FATAL" in capsys.readouterr().err
    later = provider.chat(chat_body([USER]))
    assert later.response is None
    with pytest.raises(SystemExit) as exited:
        provider.addon.done()
    assert exited.value.code == WITNESS_FAILURE_EXIT
    # The lines written before the fsync failed are in the file (tool call, attempt); nothing after them is.
    assert len(read_events(provider.witness)) == len(before) + 2
    provider.witness.write_text("\n".join(json.dumps(e) for e in before) + "\n")  # keep teardown's check meaningful


def test_witness_appends_with_continuing_seq(make_provider: MakeProvider, tmp_path: Path) -> None:
    first = make_provider()
    first.chat(chat_body([USER]))
    first.addon.done()
    scenario_path = tmp_path / "again.json"
    scenario_path.write_text(json.dumps(tool_success_scenario()))
    addon = ScriptedProvider()
    with taddons.context(addon) as tctx:
        tctx.configure(addon, probe_scenario=str(scenario_path), probe_witness=str(first.witness))
        addon.done()
    events = assert_valid_witness(first.witness)
    assert [e["event"] for e in events] == ["start", "tool_call", "attempt", "end", "start", "end"]


def configure_values(tmp_path: Path, **options: str) -> dict[str, str]:
    (tmp_path / "bad.json").write_text("{")
    (tmp_path / "invalid.json").write_text(json.dumps({**tool_success_scenario(), "script": []}))
    (tmp_path / "good.json").write_text(json.dumps(tool_success_scenario()))
    values = {
        "probe_scenario": str(tmp_path / "good.json"),
        "probe_witness": str(tmp_path / "w.jsonl"),
        "probe_markers": "/probe/markers",
    }
    values.update({key: value.format(tmp=tmp_path) for key, value in options.items()})
    return values


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"probe_scenario": "{tmp}/absent.json"}, "cannot read"),
        ({"probe_scenario": "{tmp}/bad.json"}, "not JSON"),
        ({"probe_scenario": "{tmp}/invalid.json"}, "script"),
        ({"probe_witness": "{tmp}/no/such/dir/w.jsonl"}, "cannot open"),
        ({"probe_markers": "relative/markers"}, "absolute"),
    ],
)
def test_configure_rejects_bad_options(tmp_path: Path, options: dict[str, str], message: str) -> None:
    addon = ScriptedProvider()
    with taddons.context(addon) as tctx:
        with pytest.raises(exceptions.OptionsError, match=message):
            tctx.configure(addon, **configure_values(tmp_path, **options))
        assert addon.interpreter is None


@pytest.mark.parametrize("missing", ["probe_scenario", "probe_witness"])
def test_configure_without_required_option_logs_error_and_stays_unconfigured(
    tmp_path: Path, missing: str, caplog: pytest.LogCaptureFixture
) -> None:
    addon = ScriptedProvider()
    with taddons.context(addon) as tctx:
        tctx.configure(addon, **configure_values(tmp_path, **{missing: ""}))
        assert addon.interpreter is None
    assert any(record.levelname == "ERROR" and missing in record.getMessage() for record in caplog.records)


def test_failed_reconfigure_keeps_playing_the_active_scenario(make_provider: MakeProvider, tmp_path: Path) -> None:
    provider = make_provider()
    addon = provider.addon
    active = addon.interpreter
    assert provider.context is not None
    with pytest.raises(exceptions.OptionsError):
        provider.context.configure(addon, probe_scenario=str(tmp_path / "absent.json"))
    assert addon.interpreter is active
    assert status(provider.chat(chat_body([USER]))) == 200


def test_unconfigured_addon_refuses_traffic(make_provider: MakeProvider) -> None:
    provider = make_provider()
    provider.addon.done()
    flow = provider.chat(chat_body([USER]))
    assert flow.response is None and flow.error is not None


def test_loads_as_mitmdump_script(tmp_path: Path) -> None:
    """`mitmdump -s proxy_addons/provider.py` finds the addon through the module's `addons` list."""
    scenario_path = tmp_path / "scenario.json"
    scenario_path.write_text(json.dumps(tool_success_scenario()))
    script = Path(__file__).resolve().parents[3] / "proxy_addons" / "provider.py"
    with taddons.context() as tctx:
        module = tctx.script(str(script))  # mitmproxy configures it at once; without options it logs an error
        (addon,) = module.addons
        assert type(addon).__name__ == "ScriptedProvider" and addon.interpreter is None
        tctx.options.update(
            probe_scenario=str(scenario_path),
            probe_witness=str(tmp_path / "w.jsonl"),
            probe_markers=str(tmp_path / "m"),
        )
        tctx.master.addons.invoke_addon_sync(module, hooks.ConfigureHook(set(tctx.options.keys())))
        flow = Provider(addon, tmp_path / "w.jsonl", tmp_path / "m", scenario_path).chat(chat_body([USER]))
        assert status(flow) == 200
        addon.done()
    events = assert_valid_witness(tmp_path / "w.jsonl")
    assert [e["event"] for e in events] == ["start", "tool_call", "attempt", "end"]


@pytest.mark.parametrize("fatal", [False, True])
def test_told_to_exit_when_done_it_ends_the_process_only_after_the_witness_is_closed(
    make_provider: MakeProvider, monkeypatch: pytest.MonkeyPatch, fatal: bool
) -> None:
    provider = make_provider()
    provider.context.options.update(probe_exit_when_done=True)
    exits: list[tuple[int, list[dict[str, Any]], bool]] = []

    def exit_now(code: int) -> None:  # what os._exit would end: record what the witness holds by then
        exits.append((code, read_events(provider.witness), provider.addon.interpreter is None))

    monkeypatch.setattr("proxy_addons.provider.os._exit", exit_now)
    if fatal:
        provider.addon._die("witness write failed: test", shutdown=False)
        with pytest.raises(SystemExit):  # only because the stand-in for os._exit returned
            provider.addon.done()
    else:
        provider.addon.done()
    ((code, events, closed),) = exits
    assert closed, "the process would end with the witness still open"
    if fatal:
        assert code == WITNESS_FAILURE_EXIT
    else:
        assert code == 0
        assert events[-1]["event"] == "end"


def test_inert_default_addons_are_pruned_unless_their_options_are_set() -> None:
    addon = ScriptedProvider()
    extras = [
        anticache.AntiCache(),
        modifyheaders.ModifyHeaders(),
        maplocal.MapLocal(),
        save.Save(),
        proxyserver.Proxyserver(),
        dumper.Dumper(),
    ]
    with taddons.context(addon, *extras) as tctx:
        tctx.options.update(modify_headers=["/~q/x-probe/1"])
        removed = prune_inert_addons(tctx.master.addons, tctx.options)
        assert sorted(removed) == ["anticache", "maplocal", "save"]
        names = {type(a).__name__ for a in tctx.master.addons.chain}
        # What moves traffic or reports stays, and so does an addon the command line turned on.
        assert {"ScriptedProvider", "Proxyserver", "Dumper", "ModifyHeaders"} <= names
        assert names.isdisjoint({"AntiCache", "MapLocal", "Save"})
        assert prune_inert_addons(tctx.master.addons, tctx.options) == []
