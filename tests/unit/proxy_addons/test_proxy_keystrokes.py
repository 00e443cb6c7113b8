"""Keystroke-JSON delivery (Terminus 2): steps as typed commands, the screen as the result, `task_complete` twice."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from conftest import MakeProvider, assert_valid_witness, chat_body, response_json, tool_success_scenario

from proxy_addons.delivery_keystrokes import keystroke_command
from proxy_addons.scenario import ScenarioError, parse_scenario

PROMPT = {"role": "user", "content": "You are an AI assistant tasked with solving command-line tasks...\n$ "}


def keystroke_scenario() -> dict[str, Any]:
    return {**tool_success_scenario(), "harness_profile": {"delivery": "keystrokes"}}


def type_into_terminal(reply: dict[str, Any]) -> str:
    """What Terminus does with a reply: type each command into one shell and return the new screen text."""
    content = json.loads(reply["choices"][0]["message"]["content"])
    screen = ""
    for cmd in content["commands"]:
        typed = cmd["keystrokes"]
        ran = subprocess.run(["bash", "-c", typed], capture_output=True, text=True, check=False, timeout=30)
        screen += f"$ {typed}{ran.stdout}"
    return screen + "$ "


def test_a_scripted_run_reaches_terminus_as_text_and_ends_on_the_second_task_complete(
    make_provider: MakeProvider,
) -> None:
    provider = make_provider(keystroke_scenario())
    messages: list[dict[str, Any]] = [PROMPT]
    replies = []
    for _ in range(4):
        reply = response_json(provider.chat(chat_body(messages, tools=[])))
        replies.append(reply)
        message = reply["choices"][0]["message"]
        # No tool calls on the wire: Terminus advertises none and reads only the text.
        assert message.get("tool_calls") in (None, [])
        screen = type_into_terminal(reply)
        messages = [
            *messages,
            {"role": "assistant", "content": message["content"]},
            {"role": "user", "content": screen},
        ]
    texts = [json.loads(r["choices"][0]["message"]["content"]) for r in replies]
    assert [len(t["commands"]) for t in texts] == [1, 1, 0, 0]
    assert [t["task_complete"] for t in texts] == [False, False, True, True]
    assert texts[3]["analysis"] == "PROBE_DONE"

    attempts = provider.events("attempt")
    assert [a["reply_kind"] for a in attempts] == ["tool_calls", "tool_calls", "final_answer", "final_answer"]
    calls = provider.events("tool_call")
    assert [c["name"] for c in calls] == ["bash_command", "bash_command"]
    # The screen after each reply is what the model saw of its call, with the token the command printed.
    seen = provider.events("tool_result_seen")
    assert [s["tool_call_id"] for s in seen] == [c["tool_call_id"] for c in calls]
    assert all(s["token_present"] for s in seen)
    assert all(m["present"] and m["matches"] for m in provider.events("marker"))
    # A fifth request comes after the confirmed final answer: out of script.
    late = provider.chat(chat_body(messages, tools=[]))
    assert late.response is not None and late.response.status_code == 409
    provider.addon.done()
    events = assert_valid_witness(provider.witness)
    assert events[-1]["event"] == "end" and events[-1]["finished"] is True


def test_the_typed_line_never_shows_the_token_whole_and_keeps_the_shell_alive(tmp_path: Path) -> None:
    token = "probe_0123abcd"
    command = keystroke_command(str(tmp_path), "call_1", token, 3)
    assert token not in command
    ran = subprocess.run(
        ["bash", "-c", f"{command}; echo status=$?; echo alive"], capture_output=True, text=True, check=False
    )
    assert ran.stdout.splitlines() == [token, "status=3", "alive"]


def test_unknown_delivery_is_refused() -> None:
    import pytest

    with pytest.raises(ScenarioError, match="delivery"):
        parse_scenario({**tool_success_scenario(), "harness_profile": {"delivery": "smoke-signals"}})
