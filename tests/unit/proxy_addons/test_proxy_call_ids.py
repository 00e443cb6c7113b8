"""`harness_profile.tool_call_ids: alphanumeric`: the script's calls carry ids OpenClaw's id sanitizer leaves alone."""

from __future__ import annotations

import re
from typing import Any

import pytest
from conftest import (
    MakeProvider,
    assert_valid_witness,
    chat_body,
    execute_tool_calls,
    response_json,
    tool_success_scenario,
)

from proxy_addons.scenario import ScenarioError, parse_scenario

USER = {"role": "user", "content": "Run the shell commands you are asked to run."}
ALNUM = re.compile(r"[A-Za-z0-9]+")


def profiled(style: object) -> dict[str, Any]:
    return {**tool_success_scenario(), "harness_profile": {"tool_call_ids": style}}


def test_alphanumeric_ids_are_issued_witnessed_and_joined(make_provider: MakeProvider) -> None:
    provider = make_provider(profiled("alphanumeric"))
    messages: list[dict[str, Any]] = [USER]
    ids = []
    for _ in range(2):
        reply = response_json(provider.chat(chat_body(messages)))
        ids += [c["id"] for c in reply["choices"][0]["message"]["tool_calls"]]
        messages = [*messages, *execute_tool_calls(provider, reply)]
    final = response_json(provider.chat(chat_body(messages)))
    assert final["choices"][0]["message"]["content"] == "PROBE_DONE"
    # `call` and the hex of the protocol's own id, nothing else; each result joined the call it answers.
    assert all(ALNUM.fullmatch(i) and i.startswith("call") for i in ids), ids
    assert [e["tool_call_id"] for e in provider.events("tool_call")] == ids
    assert [e["tool_call_id"] for e in provider.events("tool_result_seen")] == ids
    provider.addon.done()
    assert_valid_witness(provider.witness)


def test_without_the_profile_ids_keep_the_protocols_own_spelling(make_provider: MakeProvider) -> None:
    provider = make_provider(tool_success_scenario())
    reply = response_json(provider.chat(chat_body([USER])))
    (call,) = reply["choices"][0]["message"]["tool_calls"]
    assert call["id"].startswith("call_")


def test_an_id_rewritten_by_the_harness_is_still_refused_without_the_profile(make_provider: MakeProvider) -> None:
    # What OpenClaw does to `call_<hex>`: the result comes back under `call<hex>`, which answers no issued call.
    provider = make_provider(tool_success_scenario())
    reply = response_json(provider.chat(chat_body([USER])))
    executed = execute_tool_calls(provider, reply)
    for message in executed:
        message.get("tool_calls", [{}])[0].update(id=message.get("tool_calls", [{}])[0].get("id", "").replace("_", ""))
        if message.get("role") == "tool":
            message["tool_call_id"] = message["tool_call_id"].replace("_", "")
    flow = provider.chat(chat_body([USER, *executed]))
    assert flow.response is not None and flow.response.status_code == 409
    assert provider.events("violation")[-1]["code"] == "tool_result_missing"


@pytest.mark.parametrize("style", ["underscore", 1, ""])
def test_an_unknown_style_is_refused(style: object) -> None:
    with pytest.raises(ScenarioError, match="tool_call_ids"):
        parse_scenario(profiled(style))
