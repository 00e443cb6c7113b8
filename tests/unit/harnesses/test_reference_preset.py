"""The reference harness's launch preset: command line and environment per option, and bad values refused."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from orchestrator.harnesses import LaunchContext, get_harness
from orchestrator.harnesses.reference import MODES, PROTOCOLS, ReferenceHarness
from orchestrator.scenarios import load_scenario

REFERENCE_DIR = Path(__file__).resolve().parents[3] / "images" / "reference"
CTX = LaunchContext(task_id="tool_success-1")


def _flag(command: list[str], name: str) -> str:
    return command[command.index(name) + 1]


def test_defaults_honest_chat_json_with_request_timeout() -> None:
    scenario = load_scenario("tool_success")
    launch = ReferenceHarness().launch(scenario, CTX)
    command = launch.command
    assert command[0] == "probe-reference"
    assert _flag(command, "--task") == scenario.task
    assert _flag(command, "--task-id") == "tool_success-1"
    assert _flag(command, "--model") == scenario.model
    assert _flag(command, "--rollout") == "/home/probe/.probe-reference/rollout.json"
    assert _flag(command, "--mode") == "honest"
    assert _flag(command, "--protocol") == "chat"
    assert _flag(command, "--timeout") == "15"
    assert "--stream" not in command
    assert launch.environment == {"OPENAI_BASE_URL": CTX.base_url, "OPENAI_API_KEY": CTX.api_key}


@pytest.mark.parametrize("mode", list(MODES))
def test_every_mode_is_passed_through(mode: str) -> None:
    launch = get_harness("reference", {"mode": mode}).launch(load_scenario("tool_success"), CTX)
    assert _flag(launch.command, "--mode") == mode


@pytest.mark.parametrize(
    ("value", "streams"), [("true", True), ("TRUE", True), ("1", True), ("false", False), ("no", False)]
)
def test_stream_option(value: str, streams: bool) -> None:
    launch = ReferenceHarness({"stream": value}).launch(load_scenario("tool_success"), CTX)
    assert ("--stream" in launch.command) is streams


def test_responses_uses_the_openai_environment() -> None:
    launch = ReferenceHarness({"protocol": "responses", "stream": "true"}).launch(load_scenario("tool_success"), CTX)
    assert _flag(launch.command, "--protocol") == "responses" and "--stream" in launch.command
    assert launch.environment == {"OPENAI_BASE_URL": "http://provider:8080/v1", "OPENAI_API_KEY": CTX.api_key}


@pytest.mark.parametrize("base_url", ["http://provider:8080/v1", "http://provider:8080/v1/"])
def test_messages_uses_the_anthropic_environment_without_v1(base_url: str) -> None:
    ctx = LaunchContext(base_url=base_url, task_id="t")
    launch = ReferenceHarness({"protocol": "messages"}).launch(load_scenario("tool_success"), ctx)
    assert _flag(launch.command, "--protocol") == "messages"
    assert launch.environment == {"ANTHROPIC_BASE_URL": "http://provider:8080", "ANTHROPIC_API_KEY": ctx.api_key}


@pytest.mark.parametrize("base_url", ["http://provider:8080/v1", "http://provider:8080/v1/"])
def test_gemini_uses_google_genais_environment_without_v1(base_url: str) -> None:
    ctx = LaunchContext(base_url=base_url, task_id="t")
    launch = ReferenceHarness({"protocol": "gemini", "stream": "true"}).launch(load_scenario("tool_success"), ctx)
    assert _flag(launch.command, "--protocol") == "gemini" and "--stream" in launch.command
    assert launch.environment == {"GOOGLE_GEMINI_BASE_URL": "http://provider:8080", "GEMINI_API_KEY": ctx.api_key}


def test_declares_all_four_protocols_and_lists_every_choice() -> None:
    assert ReferenceHarness.protocols == PROTOCOLS == ("chat", "responses", "messages", "gemini")
    declared = {o.name: o for o in ReferenceHarness.options_declared}
    assert set(declared) == {"mode", "stream", "protocol", "targets"}
    assert declared["mode"].choices == tuple(MODES)
    assert declared["protocol"].choices == PROTOCOLS
    assert all(mode in declared["mode"].allowed() for mode in MODES)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"mode": "lying"}, "option mode='lying' is not one of: honest, hang, drop_failed_attempt"),
        ({"mode": "drop-failed-attempt"}, "option mode='drop-failed-attempt' is not one of"),
        ({"protocol": "completions"}, "option protocol='completions' is not one of: chat, responses, messages, gemini"),
        ({"stream": "maybe"}, "option stream='maybe' is not true or false"),
        ({"colour": "red"}, "has no option(s) ['colour']"),
    ],
)
def test_bad_values_are_refused(options: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError) as refused:
        get_harness("reference", options)
    assert message in str(refused.value)


def test_modes_match_the_agent() -> None:
    """The preset's list is the agent's own (it lives in the image folder, importable from there)."""
    sys.path.insert(0, str(REFERENCE_DIR))
    try:
        from probe_reference.modes import MODES as AGENT_MODES
        from probe_reference.rollout import PROTOCOLS as AGENT_PROTOCOLS
    finally:
        sys.path.remove(str(REFERENCE_DIR))
    assert list(MODES) == list(AGENT_MODES)
    assert PROTOCOLS == AGENT_PROTOCOLS
