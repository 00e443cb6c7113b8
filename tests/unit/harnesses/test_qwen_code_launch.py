"""The Qwen Code launch preset: command line, settings.json per protocol, endpoint variables, native paths, image."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from orchestrator.harnesses import LaunchContext, get_harness
from orchestrator.harnesses.qwen_code import AUTH_TYPES, PROBE_DIR, QwenCodeHarness
from orchestrator.images import parent_of
from orchestrator.scenarios import load_scenario
from orchestrator.variants.packages import package_of, pinned_version

ROOT = Path(__file__).resolve().parents[3]
IMAGE = ROOT / "images" / "qwen-code"
SETTINGS = "/home/probe/.qwen/settings.json"


def _qwen_argv(script: str) -> list[str]:
    return shlex.split(script.split(" && exec ", 1)[1].split(" > ", 1)[0])


def test_registered_under_its_name_with_three_protocols() -> None:
    h = get_harness("qwen-code")
    assert isinstance(h, QwenCodeHarness)
    assert (h.name, h.image, h.protocols) == ("qwen-code", "qwen-code", ("chat", "responses", "messages"))
    with pytest.raises(ValueError, match="protocol='gemini'"):
        get_harness("qwen-code", {"protocol": "gemini"})
    with pytest.raises(ValueError, match="sdk_retries='-1'"):
        get_harness("qwen-code", {"sdk_retries": "-1"})
    with pytest.raises(ValueError, match="stream_idle_timeout='0'"):
        get_harness("qwen-code", {"stream_idle_timeout": "0"})


@pytest.mark.parametrize("protocol", ["chat", "responses", "messages"])
def test_headless_yolo_run_with_chat_recording_and_its_stream_collected(protocol: str) -> None:
    scenario = load_scenario("tool_success")
    launch = get_harness("qwen-code", {"protocol": protocol}).launch(scenario, LaunchContext())
    assert launch.command[:2] == ["sh", "-c"]
    script = launch.command[2]
    assert script.endswith(f"> {PROBE_DIR}/events.jsonl </dev/null")
    qwen = _qwen_argv(script)
    assert qwen[:2] == ["qwen", "--yolo"]
    assert qwen[qwen.index("--auth-type") + 1] == AUTH_TYPES[protocol]
    assert qwen[qwen.index("--model") + 1] == scenario.model
    assert qwen[qwen.index("--output-format") + 1] == "stream-json"
    assert "--chat-recording" in qwen
    # The task rides in the `=` form, so a task starting with a dash stays the prompt.
    assert qwen[-1] == f"--prompt={scenario.task}"
    assert "PROBE_DONE" not in script  # the expectations never reach the harness


@pytest.mark.parametrize(
    ("protocol", "expected"),
    [
        ("chat", {"OPENAI_BASE_URL": "http://provider:8080/v1", "OPENAI_MODEL": "probe-model"}),
        ("responses", {"OPENAI_BASE_URL": "http://provider:8080/v1", "OPENAI_MODEL": "probe-model"}),
        ("messages", {"ANTHROPIC_BASE_URL": "http://provider:8080", "ANTHROPIC_MODEL": "probe-model"}),
    ],
)
def test_endpoint_variables_name_the_scripted_provider(protocol: str, expected: dict[str, str]) -> None:
    ctx = LaunchContext()
    env = get_harness("qwen-code", {"protocol": protocol}).launch(load_scenario("tool_success"), ctx).environment
    assert {k: env[k] for k in expected} == expected
    key = "ANTHROPIC_API_KEY" if protocol == "messages" else "OPENAI_API_KEY"
    assert env[key] == ctx.api_key
    other = "OPENAI_BASE_URL" if protocol == "messages" else "ANTHROPIC_BASE_URL"
    assert other not in env
    assert env["QWEN_USAGE_STATISTICS_ENABLED"] == "false"
    assert env["QWEN_CODE_NO_RELAUNCH"] == "true"


def test_settings_pin_the_auth_type_the_deadlines_and_every_opt_out() -> None:
    launch = get_harness("qwen-code", {"protocol": "messages"}).launch(load_scenario("retry_429"), LaunchContext())
    assert sorted(launch.files) == [SETTINGS]
    settings = json.loads(launch.files[SETTINGS])
    assert settings["security"]["auth"]["selectedType"] == "anthropic"
    generation = settings["model"]["generationConfig"]
    assert generation["streamIdleTimeoutMs"] == 20_000
    assert 0 < generation["timeout"] <= 60_000
    assert "maxRetries" not in generation  # the SDK's own retries, as shipped
    assert settings["privacy"] == {"usageStatisticsEnabled": False}
    assert settings["telemetry"] == {"enabled": False}
    assert settings["general"] == {"enableAutoUpdate": False}
    options = {"sdk_retries": "0", "stream_idle_timeout": "45"}
    zero = get_harness("qwen-code", options).launch(load_scenario("retry_429"), LaunchContext())
    generation = json.loads(zero.files[SETTINGS])["model"]["generationConfig"]
    assert (generation["maxRetries"], generation["streamIdleTimeoutMs"]) == (0, 45_000)


def test_native_paths_are_qwens_home_folder_and_our_stream() -> None:
    assert get_harness("qwen-code").native_paths == ("/home/probe/.qwen", PROBE_DIR)


def test_version_names_the_harness() -> None:
    h = get_harness("qwen-code")
    assert h.version_argv() == ("qwen", "--version")
    assert h.parse_version("0.24.4\n") == "qwen-code 0.24.4"


def test_image_pins_the_release_with_a_lock_on_the_node_image() -> None:
    assert parent_of("qwen-code") == "node"
    package = package_of("qwen-code")
    assert package is not None and package.prefix == "/opt/qwen-code"
    assert pinned_version(IMAGE, package) == "0.24.4"
    lock = json.loads((IMAGE / "package-lock.json").read_text())
    entry = lock["packages"]["node_modules/@qwen-code/qwen-code"]
    assert entry["version"] == "0.24.4" and entry["integrity"].startswith("sha512-")
    dockerfile = (IMAGE / "Dockerfile").read_text()
    assert "npm ci" in dockerfile and "USER probe" in dockerfile
