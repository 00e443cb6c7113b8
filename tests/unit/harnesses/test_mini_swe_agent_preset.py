"""mini-SWE-agent's launch preset: command line, environment, config file, options and its final-answer profile."""

from __future__ import annotations

import pytest
import yaml

from orchestrator.harnesses import LaunchContext, get_harness
from orchestrator.harnesses.mini_swe_agent import SUBMIT_PREFIX, MiniSweAgentHarness
from orchestrator.scenarios import load_scenario

CTX = LaunchContext(task_id="tool_success")


def _flag(command: list[str], name: str) -> str:
    return command[command.index(name) + 1]


def test_one_shot_command_with_stdin_closed() -> None:
    scenario = load_scenario("tool_success")
    launch = get_harness("mini-swe-agent").launch(scenario, CTX)
    command = launch.command
    # sh closes stdin and execs mini with the rest of the argv untouched.
    assert command[:4] == ["sh", "-c", 'exec "$@" </dev/null', "mini"]
    mini = command[4:]
    assert mini[0] == "mini"
    assert _flag(mini, "-m") == "openai/probe-model"
    assert _flag(mini, "-t") == scenario.task
    assert {"-y", "--exit-immediately"} <= set(mini)
    assert _flag(mini, "-l") == "0"
    assert _flag(mini, "-o") == "/home/probe/.mini-swe-agent-probe/trajectory.json"
    configs = [mini[i + 1] for i, arg in enumerate(mini) if arg == "-c"]
    assert configs == ["mini.yaml", "/home/probe/.mini-swe-agent-probe/probe.yaml"]


def test_environment_points_litellm_at_the_provider_without_egress() -> None:
    env = MiniSweAgentHarness().launch(load_scenario("tool_success"), CTX).environment
    assert env == {
        "MSWEA_CONFIGURED": "true",
        "OPENAI_API_KEY": CTX.api_key,
        "OPENAI_API_BASE": "http://provider:8080/v1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "MSWEA_COST_TRACKING": "ignore_errors",
        "MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT": "4",
    }


def test_config_file_sets_the_request_timeout() -> None:
    launch = get_harness("mini-swe-agent", {"request_timeout": "20", "retry_attempts": "10"}).launch(
        load_scenario("tool_success"), CTX
    )
    (path,) = launch.files
    assert path.startswith(CTX.home + "/")
    assert yaml.safe_load(launch.files[path]) == {"model": {"model_kwargs": {"timeout": 20}}}
    assert launch.environment["MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT"] == "10"


@pytest.mark.parametrize("options", [{"request_timeout": "0"}, {"retry_attempts": "x"}, {"stream": "true"}])
def test_bad_options_are_refused(options: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="mini-swe-agent"):
        get_harness("mini-swe-agent", options)


def test_profile_asks_the_proxy_for_the_final_answer_through_the_shell() -> None:
    assert MiniSweAgentHarness().harness_profile() == {"final_answer": {"via": "shell", "prefix": SUBMIT_PREFIX}}
    assert get_harness("reference").harness_profile() is None


def test_version_is_the_last_line_naming_a_version() -> None:
    text = "Provider List: https://docs.litellm.ai/docs/providers\nmini-swe-agent 2.4.6\n"
    assert MiniSweAgentHarness().parse_version(text) == "mini-swe-agent 2.4.6"
    assert MiniSweAgentHarness().parse_version("") == ""
