"""Code tools (Stirrup `code_exec{cmd}`) as the way to the shell, and the final answer through a finish tool."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import (
    MakeProvider,
    assert_valid_witness,
    chat_body,
    response_json,
    run_command,
    tool_success_scenario,
)

from orchestrator.evidence import faults
from proxy_addons.scenario import ScenarioError, parse_scenario

USER = {"role": "user", "content": "Run the shell commands you are asked to run."}
# The two tools as Stirrup 0.2.1 advertises them (pydantic schemas of CodeExecutionParams and FinishParams).
CODE_EXEC = {
    "type": "function",
    "function": {
        "name": "code_exec",
        "description": "Execute a shell command in the execution environment.",
        "parameters": {
            "type": "object",
            "properties": {"cmd": {"type": "string", "description": "Shell command to execute (bash syntax)."}},
            "required": ["cmd"],
        },
    },
}
FINISH = {
    "type": "function",
    "function": {
        "name": "finish",
        "description": "Signal task completion with a reason.",
        "parameters": {
            "type": "object",
            "properties": {
                "reason": {"type": "string", "description": "Reason for finishing."},
                "paths": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["reason", "paths"],
        },
    },
}
TOOLS = [CODE_EXEC, FINISH]
PROFILE = {"final_answer": {"via": "tool", "tool": "finish", "argument": "reason"}}


def stirrup_scenario(exit_codes: tuple[int, ...] = (0, 7)) -> dict[str, Any]:
    script: list[dict[str, Any]] = [{"tool_calls": [{"exit_code": code}]} for code in exit_codes]
    return {**tool_success_scenario(), "script": [*script, {"final_answer": "PROBE_DONE"}], "harness_profile": PROFILE}


def shell_results(code: int, stdout: str, stderr: str) -> str:
    # The shape of stirrup.tools.code_backends.base.format_result.
    return (
        f"<shell_results>\n<exit_code>{code}</exit_code>\n<stdout>{stdout}</stdout>"
        f"\n<stderr>{stderr}</stderr>\n</shell_results>"
    )


def run_code_exec(reply: dict[str, Any]) -> list[dict[str, Any]]:
    message = reply["choices"][0]["message"]
    history: list[dict[str, Any]] = [message]
    for call in message["tool_calls"]:
        assert call["function"]["name"] == "code_exec"
        ran = run_command(json.loads(call["function"]["arguments"])["cmd"])
        history.append(
            {
                "role": "tool",
                "tool_call_id": call["id"],
                "content": shell_results(ran.returncode, ran.stdout, ran.stderr),
            }
        )
    return history


def test_code_exec_gets_the_scripted_command_and_its_exit_code_shows(make_provider: MakeProvider) -> None:
    provider = make_provider(stirrup_scenario())
    messages: list[dict[str, Any]] = [USER]
    for _ in range(2):
        reply = response_json(provider.chat(chat_body(messages, tools=TOOLS)))
        messages = [*messages, *run_code_exec(reply)]
    issued = provider.events("tool_call")
    assert [e["name"] for e in issued] == ["code_exec", "code_exec"]
    assert [e["arguments"] for e in issued] == [{"cmd": e["command"]} for e in issued]
    # The scripted exit code is what the harness's own result text says.
    assert "<exit_code>7</exit_code>" in messages[-1]["content"]

    final = response_json(provider.chat(chat_body(messages, tools=TOOLS)))
    choice = final["choices"][0]
    (call,) = choice["message"]["tool_calls"]
    assert call["function"]["name"] == "finish"
    assert json.loads(call["function"]["arguments"]) == {"reason": "PROBE_DONE", "paths": []}
    attempt = provider.events("attempt")[-1]
    assert (attempt["reply_kind"], attempt["answer"], attempt["tool_call_ids"]) == ("final_answer", "PROBE_DONE", [])
    # The finish call runs no command: it is not a witnessed tool call and has no marker.
    assert len(provider.events("tool_call")) == 2
    seen = provider.events("tool_result_seen")
    assert [s["token_present"] for s in seen] == [True, True]
    provider.addon.done()
    events = assert_valid_witness(provider.witness)
    assert events[-1]["event"] == "end" and events[-1]["finished"] is True
    assert [(m["present"], m["matches"]) for m in events if m["event"] == "marker"] == [(True, True), (True, True)]


def test_a_request_after_finish_is_after_final(make_provider: MakeProvider) -> None:
    scenario = stirrup_scenario(exit_codes=())
    provider = make_provider(scenario)
    reply = response_json(provider.chat(chat_body([USER], tools=TOOLS)))
    (call,) = reply["choices"][0]["message"]["tool_calls"]
    tool = {"role": "tool", "tool_call_id": call["id"], "content": "PROBE_DONE"}
    flow = provider.chat(chat_body([USER, reply["choices"][0]["message"], tool], tools=TOOLS))
    assert flow.response is not None and flow.response.status_code == 409
    assert provider.events("violation")[-1]["code"] == "after_final"


def test_finish_not_advertised_is_refused(make_provider: MakeProvider) -> None:
    provider = make_provider(stirrup_scenario(exit_codes=()))
    flow = provider.chat(chat_body([USER], tools=[CODE_EXEC]))
    assert flow.response is not None and flow.response.status_code == 400
    assert provider.events("violation")[-1]["code"] == "no_finish_tool"
    provider.addon.done()
    assert_valid_witness(provider.witness)


def test_without_the_profile_a_code_tool_still_runs_commands_and_the_answer_is_text(
    make_provider: MakeProvider,
) -> None:
    scenario = {**tool_success_scenario(), "script": [{"tool_calls": [{"exit_code": 0}]}, {"final_answer": "X"}]}
    provider = make_provider(scenario)
    reply = response_json(provider.chat(chat_body([USER], tools=TOOLS)))
    final = response_json(provider.chat(chat_body([USER, *run_code_exec(reply)], tools=TOOLS)))
    assert final["choices"][0]["message"] == {"role": "assistant", "content": "X"}


@pytest.mark.parametrize(
    "final",
    [
        {"via": "tool", "tool": "finish"},
        {"via": "tool", "tool": "", "argument": "reason"},
        {"via": "tool", "tool": "finish", "argument": "reason", "prefix": "P"},
    ],
)
def test_bad_tool_profiles_are_refused_by_proxy_and_schema(final: dict[str, Any]) -> None:
    document = {**tool_success_scenario(), "harness_profile": {"final_answer": final}}
    with pytest.raises(ScenarioError):
        parse_scenario(document)
    assert faults(document, "probe-scenario/v1") != []


def test_the_orchestrator_schema_accepts_the_tool_profile() -> None:
    document = stirrup_scenario()
    assert faults(document, "probe-scenario/v1") == []
    final_tool = parse_scenario(document).final_answer_tool
    assert final_tool is not None and (final_tool.tool, final_tool.argument) == ("finish", "reason")


# NOOA's execute_python as nooa 0.0.10 advertises it (the cell's code; `self` is the agent).
EXECUTE_PYTHON = {
    "type": "function",
    "function": {
        "name": "execute_python",
        "description": "Execute Python code in the agent's environment.",
        "parameters": {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]},
    },
}


class _FakeShellResult(str):
    """Stands in for nooa's ShellResult: the value is stdout; repr shows a non-zero return code."""

    def __new__(cls, stdout: str, returncode: int) -> _FakeShellResult:
        obj = super().__new__(cls, stdout)
        obj.returncode = returncode  # type: ignore[attr-defined]
        return obj

    def __repr__(self) -> str:
        code = self.returncode  # type: ignore[attr-defined]
        return f"BashOutput(stdout={str.__str__(self)!r}" + (f", return_code={code})" if code else ")")


class _PersistentShell:
    """Runs each command as one `bash -c`, like one line typed into nooa's persistent shell session."""

    async def run(self, command: str) -> _FakeShellResult:
        ran = run_command(command)
        return _FakeShellResult(ran.stdout, ran.returncode)


def run_cell(code: str) -> str:
    """Execute a cell the way a CodeAct REPL does (top-level await, `self` in scope) and return what it printed."""
    import asyncio
    import contextlib
    import io
    import types

    agent = types.SimpleNamespace(shell=_PersistentShell())
    source = "async def __cell(self):\n" + "".join(f"    {line}\n" for line in code.splitlines())
    scope: dict[str, Any] = {}
    exec(compile(source, "<cell>", "exec"), scope)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        asyncio.run(scope["__cell"](agent))
    return out.getvalue()


def test_execute_python_gets_a_cell_running_the_command_through_the_shell_api(make_provider: MakeProvider) -> None:
    scenario = {**tool_success_scenario(), "script": [{"tool_calls": [{"exit_code": 7}]}, {"final_answer": "X"}]}
    provider = make_provider(scenario)
    reply = response_json(provider.chat(chat_body([USER], tools=[EXECUTE_PYTHON])))
    (call,) = reply["choices"][0]["message"]["tool_calls"]
    assert call["function"]["name"] == "execute_python"
    code = json.loads(call["function"]["arguments"])["code"]
    (issued,) = provider.events("tool_call")
    assert issued["arguments"] == {"code": code} and repr("(" + issued["command"] + ")") in code
    assert "await self.shell.run(" in code
    printed = run_cell(code)
    # The subshell keeps `exit 7` from ending the persistent shell; the exit status is in the printed repr.
    assert printed == f"BashOutput(stdout={issued['token'] + chr(10)!r}, return_code=7)\n"
    tool = {"role": "tool", "tool_call_id": call["id"], "content": printed}
    final = response_json(
        provider.chat(chat_body([USER, reply["choices"][0]["message"], tool], tools=[EXECUTE_PYTHON]))
    )
    assert final["choices"][0]["message"]["content"] == "X"
    assert [(m["present"], m["matches"]) for m in provider.events("marker")] == [(True, True)]
    assert provider.events("tool_result_seen")[0]["token_present"] is True


# NOOA 0.0.10's return_result as BenchAgent advertises it (a TaskResult of three required texts, inline).
TASK_RESULT = {
    "description": "Structured result the agent must return when finishing a task.",
    "type": "object",
    "properties": {
        "solution_description": {"type": "string"},
        "evidence": {"type": "string"},
        "command_to_verify": {"type": "string"},
    },
    "required": ["solution_description", "evidence", "command_to_verify"],
}


def return_result(result: dict[str, Any]) -> dict[str, Any]:
    parameters = {"type": "object", "properties": {"result": result}, "required": ["result"]}
    return {"type": "function", "function": {"name": "return_result", "parameters": parameters}}


def nooa_scenario() -> dict[str, Any]:
    profile = {"final_answer": {"via": "tool", "tool": "return_result", "argument": "result"}}
    return {**tool_success_scenario(), "script": [{"final_answer": "PROBE_DONE"}], "harness_profile": profile}


def test_a_structured_finish_argument_gets_the_answer_in_each_required_text(make_provider: MakeProvider) -> None:
    provider = make_provider(nooa_scenario())
    reply = response_json(provider.chat(chat_body([USER], tools=[EXECUTE_PYTHON, return_result(TASK_RESULT)])))
    (call,) = reply["choices"][0]["message"]["tool_calls"]
    assert call["function"]["name"] == "return_result"
    assert json.loads(call["function"]["arguments"]) == {
        "result": {"solution_description": "PROBE_DONE", "evidence": "PROBE_DONE", "command_to_verify": "PROBE_DONE"}
    }
    attempt = provider.events("attempt")[-1]
    assert (attempt["reply_kind"], attempt["answer"]) == ("final_answer", "PROBE_DONE")


def test_a_structured_finish_argument_needing_more_than_texts_is_refused(make_provider: MakeProvider) -> None:
    counted = {**TASK_RESULT, "properties": {**TASK_RESULT["properties"], "n": {"type": "integer"}}}
    counted["required"] = [*TASK_RESULT["required"], "n"]
    provider = make_provider(nooa_scenario())
    flow = provider.chat(chat_body([USER], tools=[EXECUTE_PYTHON, return_result(counted)]))
    assert flow.response is not None and flow.response.status_code == 400
    assert provider.events("violation")[-1]["code"] == "no_finish_tool"


def python_output(call_id: str, printed: str) -> dict[str, Any]:
    """The user message NOOA 0.0.10 adds after a cell ran (its tool message only says `status: complete`)."""
    text = (
        f"<sys tag=\"6\">\nPythonOutput(tool_call_id='{call_id}', execution_status=<ResultStatus.COMPLETE: "
        f"'complete'>, stdout='''{printed}''')\n</sys>"
    )
    return {"role": "user", "content": text}


def test_what_a_cell_printed_in_a_later_user_message_is_the_calls_result(make_provider: MakeProvider) -> None:
    scenario = {**tool_success_scenario(), "script": [{"tool_calls": [{"exit_code": 0}]}, {"final_answer": "X"}]}
    provider = make_provider(scenario)
    reply = response_json(provider.chat(chat_body([USER], tools=[EXECUTE_PYTHON])))
    message = reply["choices"][0]["message"]
    (call,) = message["tool_calls"]
    printed = run_cell(json.loads(call["function"]["arguments"])["code"])
    ack = {"role": "tool", "tool_call_id": call["id"], "content": "status: complete"}
    history = [USER, message, ack, python_output(call["id"], printed)]
    final = response_json(provider.chat(chat_body(history, tools=[EXECUTE_PYTHON])))
    assert final["choices"][0]["message"]["content"] == "X"
    [seen] = provider.events("tool_result_seen")
    assert seen["output"] == printed and seen["token_present"] is True


def test_a_python_output_counts_only_where_a_python_code_tool_is_advertised(make_provider: MakeProvider) -> None:
    provider = make_provider()
    reply = response_json(provider.chat(chat_body([USER])))
    message = reply["choices"][0]["message"]
    (call,) = message["tool_calls"]
    # A bash-tool harness whose history claims a result only in a user message: that is no tool result.
    history = [USER, message, python_output(call["id"], "anything")]
    flow = provider.chat(chat_body(history))
    assert flow.response is not None and flow.response.status_code == 409
    assert provider.events("tool_result_seen") == []
