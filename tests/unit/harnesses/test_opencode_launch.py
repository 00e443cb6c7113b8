"""The OpenCode launch preset: command line, opencode.json, offline switches, native paths, version, pinned image."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from orchestrator.harnesses import LaunchContext, get_harness
from orchestrator.harnesses.opencode import CHUNK_TIMEOUT_MS, DATA_DIR, PROBE_DIR, OpenCodeHarness
from orchestrator.images import parent_of
from orchestrator.scenarios import load_scenario

ROOT = Path(__file__).resolve().parents[3]
IMAGE = ROOT / "images" / "opencode"
CONFIG = "/home/probe/.config/opencode/opencode.json"


def test_registered_under_its_name() -> None:
    h = get_harness("opencode")
    assert isinstance(h, OpenCodeHarness)
    assert (h.name, h.image, h.protocols) == ("opencode", "opencode", ("chat",))
    with pytest.raises(ValueError, match="has no option"):
        get_harness("opencode", {"protocol": "responses"})


def test_run_with_json_events_and_the_printed_log_where_they_are_collected() -> None:
    scenario = load_scenario("tool_success")
    launch = get_harness("opencode").launch(scenario, LaunchContext())
    assert launch.command[:2] == ["sh", "-c"]
    script = launch.command[2]
    run = shlex.split(script.split(" && ", 1)[1].split(" > ", 1)[0])
    assert run[:4] == ["opencode", "run", "--format", "json"]
    assert {"--pure", "--print-logs"} <= set(run)
    assert run[run.index("--model") + 1] == f"probe/{scenario.model}"
    assert run[-2:] == ["--", scenario.task]
    assert f"> {PROBE_DIR}/events.jsonl 2> {PROBE_DIR}/stderr.log" in script
    # The printed log is replayed to stderr afterwards, and OpenCode's own exit code is kept.
    assert script.endswith(f"cat {PROBE_DIR}/stderr.log >&2; exit $code")
    assert "PROBE_DONE" not in script


def test_config_names_the_provider_allows_every_tool_and_turns_side_agents_off() -> None:
    ctx = LaunchContext()
    launch = get_harness("opencode").launch(load_scenario("tool_success"), ctx)
    assert list(launch.files) == [CONFIG]
    config = json.loads(launch.files[CONFIG])
    provider = config["provider"]["probe"]
    assert provider["npm"] == "@ai-sdk/openai-compatible"
    assert (provider["options"]["baseURL"], provider["options"]["apiKey"]) == (ctx.base_url, ctx.api_key)
    assert list(provider["models"]) == ["probe-model"]
    assert config["permission"] == {"bash": "allow", "edit": "allow", "external_directory": "allow"}
    assert config["agent"] == {"title": {"disable": True}, "summary": {"disable": True}}
    assert (config["autoupdate"], config["model"], config["enabled_providers"]) == (
        False,
        "probe/probe-model",
        ["probe"],
    )


def test_a_silent_stream_is_abandoned_well_inside_the_episode() -> None:
    config = json.loads(
        get_harness("opencode").launch(load_scenario("harness_deadline"), LaunchContext()).files[CONFIG]
    )
    options = config["provider"]["probe"]["options"]
    assert options["chunkTimeout"] == CHUNK_TIMEOUT_MS and 0 < CHUNK_TIMEOUT_MS <= 60_000
    assert CHUNK_TIMEOUT_MS < options["timeout"] <= 300_000


def test_offline_switches() -> None:
    env = get_harness("opencode").launch(load_scenario("tool_success"), LaunchContext()).environment
    for var in ("OPENCODE_DISABLE_MODELS_FETCH", "OPENCODE_DISABLE_AUTOUPDATE", "OPENCODE_DISABLE_DEFAULT_PLUGINS"):
        assert env[var] == "1"
    assert env["NO_PROXY"] == "localhost,127.0.0.1"


def test_native_paths_are_the_data_dir_and_our_probe_dir() -> None:
    assert get_harness("opencode").native_paths == (DATA_DIR, PROBE_DIR)


def test_version_is_the_semver_opencode_prints() -> None:
    h = get_harness("opencode")
    assert h.version_command == ("opencode", "--version")
    assert h.parse_version("1.18.33\n") == "opencode 1.18.33"


def test_image_pins_opencode_with_a_lock_file_keeping_its_platform_binary() -> None:
    assert parent_of("opencode") == "node"
    package = json.loads((IMAGE / "package.json").read_text())
    assert package["dependencies"] == {"opencode-ai": "1.18.33"}
    lock = json.loads((IMAGE / "package-lock.json").read_text())["packages"]
    assert lock["node_modules/opencode-ai"]["version"] == "1.18.33"
    assert lock["node_modules/opencode-linux-x64"] == {**lock["node_modules/opencode-linux-x64"], "optional": True}
    assert lock["node_modules/opencode-linux-x64"]["version"] == "1.18.33"
    dockerfile = (IMAGE / "Dockerfile").read_text()
    assert "npm ci" in dockerfile and "--omit=optional" not in dockerfile
    assert "npm_config_cafile=/usr/local/share/harness-probe/build-ca-bundle.pem" in dockerfile
    assert dockerfile.rstrip().splitlines()[-2:] == ["USER probe", "WORKDIR /home/probe"]
