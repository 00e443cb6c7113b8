"""Python-block delivery (SciCode): steps as fenced python blocks, no result back, markers checked at the end."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import MakeProvider, assert_valid_witness, chat_body, response_json, tool_success_scenario

from proxy_addons.delivery_python_blocks import python_block_code

SYSTEM = {"role": "system", "content": "You are a helpful assistant."}
# SciCode's own extraction: the first python block, import lines dropped (scicode.gen.models.extract_python_script).
_IMPORT = re.compile(r"^\s*(import .*|from .*\s+import\s+.*)", re.M)


def block_scenario(**extra: Any) -> dict[str, Any]:
    return {**tool_success_scenario(), "harness_profile": {"delivery": "python_blocks"}, **extra}


def sub_step_prompt(k: int, earlier: list[str]) -> dict[str, Any]:
    return {"role": "user", "content": f"PREVIOUS STEPS:\n{''.join(earlier)}\nNEXT STEP {k}: run the commands."}


def extract(reply: dict[str, Any]) -> str:
    content = reply["choices"][0]["message"]["content"]
    return _IMPORT.sub("", content.split("```python")[1].split("```")[0])


def run_code(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=30)


def test_each_sub_step_gets_one_block_and_the_markers_are_checked_once_the_harness_stopped(
    make_provider: MakeProvider,
) -> None:
    provider = make_provider(block_scenario())
    codes: list[str] = []
    replies = []
    # SciCode: one fresh prompt per sub-step, earlier code in it, no assistant turn and no tool result.
    for k in range(3):
        reply = response_json(provider.chat(chat_body([SYSTEM, sub_step_prompt(k, codes)], tools=[])))
        replies.append(reply)
        message = reply["choices"][0]["message"]
        assert message.get("tool_calls") in (None, [])
        codes.append(extract(reply))
    attempts = provider.events("attempt")
    assert [a["status"] for a in attempts] == [200, 200, 200]
    assert [a["reply_kind"] for a in attempts] == ["tool_calls", "tool_calls", "final_answer"]
    assert attempts[2]["answer"] == "PROBE_DONE"
    calls = provider.events("tool_call")
    assert [c["name"] for c in calls] == ["python_block", "python_block"]
    # Nothing ran yet: no result was seen and no marker checked while SciCode talked to the model.
    assert provider.events("tool_result_seen") == [] and provider.events("marker") == []
    # SciCode's scoring phase: each sub-step's accumulated code, run after the last request.
    ran = run_code("".join(codes[:2]))
    assert ran.returncode == 0
    assert ran.stdout.split() == [c["token"] for c in calls]
    assert run_code(codes[2]).stdout == "PROBE_DONE\n"
    provider.addon.done()
    markers = provider.events("marker")
    assert [m["tool_call_id"] for m in markers] == [c["tool_call_id"] for c in calls]
    assert all(m["present"] and m["matches"] for m in markers)
    events = assert_valid_witness(provider.witness)
    assert events[-1]["event"] == "end" and events[-1]["finished"] is True


def test_a_block_never_run_leaves_its_markers_missing(make_provider: MakeProvider) -> None:
    provider = make_provider(block_scenario())
    for k in range(3):
        response_json(provider.chat(chat_body([SYSTEM, sub_step_prompt(k, [])], tools=[])))
    provider.addon.done()
    markers = provider.events("marker")
    assert len(markers) == 2 and not any(m["present"] for m in markers)


def test_a_block_writes_its_marker_and_the_token_is_never_whole_in_the_code(tmp_path: Path) -> None:
    token = "probe_0123abcd"
    code = python_block_code(str(tmp_path / "m"), "call_1", token)
    assert token not in code
    assert _IMPORT.sub("", code) == code  # survives SciCode's import stripping
    ran = run_code(code)
    assert (ran.returncode, ran.stdout) == (0, f"{token}\n")
    assert (tmp_path / "m" / "call_1.txt").read_text() == token


def test_a_failing_step_sets_the_exit_status_and_later_sub_steps_still_run(make_provider: MakeProvider) -> None:
    scenario = block_scenario(script=[{"tool_calls": [{"exit_code": 7}]}, {"tool_calls": [{}]}, {"final_answer": "X"}])
    provider = make_provider(scenario)
    codes = [
        extract(response_json(provider.chat(chat_body([SYSTEM, sub_step_prompt(k, [])], tools=[])))) for k in range(3)
    ]
    # SciCode's run of sub-step 2: sub-step 1's code, then its own.
    ran = run_code(codes[0] + codes[1])
    calls = provider.events("tool_call")
    assert ran.returncode == 7 and ran.stdout.split() == [c["token"] for c in calls]
    assert run_code(codes[1]).returncode == 0
    provider.addon.done()
    assert [m["present"] and m["matches"] for m in provider.events("marker")] == [True, True]


def test_a_request_after_the_final_block_is_out_of_script(make_provider: MakeProvider) -> None:
    provider = make_provider(block_scenario())
    for k in range(3):
        response_json(provider.chat(chat_body([SYSTEM, sub_step_prompt(k, [])], tools=[])))
    late = provider.chat(chat_body([SYSTEM, sub_step_prompt(3, [])], tools=[]))
    assert late.response is not None and late.response.status_code == 409
