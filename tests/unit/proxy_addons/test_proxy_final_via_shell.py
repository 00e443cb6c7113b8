"""A harness that ends only through its shell: the final answer is played as one shell call (harness_profile)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import (
    MakeProvider,
    assert_valid_witness,
    chat_body,
    execute_tool_calls,
    response_json,
    run_command,
    tool_success_scenario,
)

from orchestrator.evidence import faults
from proxy_addons.scenario import ScenarioError, parse_scenario

PREFIX = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
USER = {"role": "user", "content": "Run the shell commands you are asked to run."}


def shell_final_scenario(prefix: str = PREFIX) -> dict[str, Any]:
    return {**tool_success_scenario(), "harness_profile": {"final_answer": {"via": "shell", "prefix": prefix}}}


def test_final_answer_is_one_shell_call_printing_prefix_and_answer(make_provider: MakeProvider) -> None:
    provider = make_provider(shell_final_scenario())
    messages: list[dict[str, Any]] = [USER]
    for _ in range(2):
        reply = response_json(provider.chat(chat_body(messages)))
        messages = [*messages, *execute_tool_calls(provider, reply)]
    final = response_json(provider.chat(chat_body(messages)))

    choice = final["choices"][0]
    assert choice["finish_reason"] == "tool_calls" and choice["message"]["content"] is None
    (call,) = choice["message"]["tool_calls"]
    assert call["function"]["name"] == "bash"
    command = json.loads(call["function"]["arguments"])["command"]
    ran = run_command(command)
    # The output is exactly the prefix line and the answer, so "everything after the prefix line" is the answer.
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, f"{PREFIX}\nPROBE_DONE", "")

    attempt = provider.events("attempt")[-1]
    assert (attempt["reply_kind"], attempt["answer"], attempt["tool_call_ids"]) == (
        "final_answer",
        "PROBE_DONE",
        [call["id"]],
    )
    issued = provider.events("tool_call")[-1]
    assert issued["final_submit"] is True and issued["exit_code"] == 0
    assert issued["expected_output"] == f"{PREFIX}\nPROBE_DONE" and issued["command"] == command
    # The earlier calls are ordinary: the flag is set on the final-submit call only.
    assert [e.get("final_submit", False) for e in provider.events("tool_call")] == [False, False, True]

    # The harness exits after the command: no request carries its result, so the marker is checked at stop.
    assert provider.events("marker")[-1]["tool_call_id"] != call["id"]
    provider.addon.done()
    events = assert_valid_witness(provider.witness)
    marker = [e for e in events if e["event"] == "marker"][-1]
    assert (marker["tool_call_id"], marker["present"], marker["matches"]) == (call["id"], True, True)
    assert events[-1]["event"] == "end" and events[-1]["finished"] is True


def test_unexecuted_final_submit_call_is_witnessed_without_its_marker(make_provider: MakeProvider) -> None:
    scenario = shell_final_scenario()
    scenario["script"] = [{"final_answer": "PROBE_DONE"}]
    provider = make_provider(scenario)
    (call,) = response_json(provider.chat(chat_body([USER])))["choices"][0]["message"]["tool_calls"]
    provider.addon.done()
    marker = provider.events("marker")[-1]
    assert (marker["tool_call_id"], marker["present"], marker["matches"]) == (call["id"], False, False)


def test_a_request_after_the_final_submit_call_is_after_final(make_provider: MakeProvider) -> None:
    scenario = shell_final_scenario()
    scenario["script"] = [{"final_answer": "PROBE_DONE"}]
    provider = make_provider(scenario)
    reply = response_json(provider.chat(chat_body([USER])))
    flow = provider.chat(chat_body([USER, *execute_tool_calls(provider, reply)]))
    assert flow.response is not None and flow.response.status_code == 409
    assert provider.events("violation")[-1]["code"] == "after_final"


def test_final_submit_without_a_shell_tool_is_refused(make_provider: MakeProvider) -> None:
    scenario = shell_final_scenario()
    scenario["script"] = [{"final_answer": "PROBE_DONE"}]
    provider = make_provider(scenario)
    flow = provider.chat(chat_body([USER], tools=[]))
    assert flow.response is not None and flow.response.status_code == 400
    assert provider.events("violation")[-1]["code"] == "no_shell_tool"


def test_the_plain_final_answer_is_unchanged_without_a_profile(make_provider: MakeProvider) -> None:
    scenario = tool_success_scenario()
    scenario["script"] = [{"final_answer": "PROBE_DONE"}]
    provider = make_provider(scenario)
    message = response_json(provider.chat(chat_body([USER])))["choices"][0]["message"]
    assert message == {"role": "assistant", "content": "PROBE_DONE"}
    assert parse_scenario(scenario).final_answer_shell_prefix is None


@pytest.mark.parametrize(
    ("profile", "message"),
    [
        ({"final_answer": {"via": "text", "prefix": PREFIX}}, "via: shell"),
        ({"final_answer": {"via": "shell"}}, "via: shell"),
        ({"final_answer": {"via": "shell", "prefix": "A\nB"}}, "one non-empty line"),
        ({"final_answer": {"via": "shell", "prefix": " "}}, "one non-empty line"),
        ({"other": {}}, "unknown key"),
        ([], "must be an object"),
    ],
)
def test_bad_profiles_are_refused(profile: Any, message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        parse_scenario({**tool_success_scenario(), "harness_profile": profile})


def test_the_orchestrator_schema_accepts_the_profile_the_proxy_reads() -> None:
    document = shell_final_scenario()
    assert faults(document, "probe-scenario/v1") == []
    assert parse_scenario(document).final_answer_shell_prefix == PREFIX
    bad = {**document, "harness_profile": {"final_answer": {"via": "shell", "prefix": "A\nB"}}}
    assert faults(bad, "probe-scenario/v1") != []
