"""The Kilo launch preset: command line, kilo.json per protocol, its own XDG folders, phone-home switches off,
native paths, version and the pinned image."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from orchestrator.errors import BadOption
from orchestrator.harnesses import LaunchContext, get_harness
from orchestrator.harnesses.kilo import CONFIG, DATA_DIR, PROBE_DIR, KiloHarness
from orchestrator.images import parent_of
from orchestrator.scenarios import load_scenario
from orchestrator.variants.packages import package_of, pinned_version

ROOT = Path(__file__).resolve().parents[3]
IMAGE = ROOT / "images" / "kilo"
HOME = LaunchContext().home


def _config(protocol: str = "chat") -> dict[str, object]:
    launch = get_harness("kilo", {"protocol": protocol}).launch(load_scenario("tool_success"), LaunchContext())
    assert list(launch.files) == [CONFIG]
    data = json.loads(launch.files[CONFIG])
    assert isinstance(data, dict)
    return data


def test_registered_with_the_three_protocols_it_speaks() -> None:
    h = get_harness("kilo")
    assert isinstance(h, KiloHarness)
    assert (h.name, h.image, h.protocols, h.protocol) == ("kilo", "kilo", ("chat", "responses", "messages"), "chat")
    with pytest.raises(BadOption, match="protocol"):
        get_harness("kilo", {"protocol": "generate"})


def test_headless_run_with_json_events_and_the_printed_log_where_they_are_collected() -> None:
    scenario = load_scenario("tool_success")
    launch = get_harness("kilo").launch(scenario, LaunchContext())
    assert launch.command[:2] == ["sh", "-c"]
    script = launch.command[2]
    run = shlex.split(script.split(" && ", 1)[1].split(" > ", 1)[0])
    assert run[:2] == ["kilo", "run"]
    assert {"--auto", "--pure", "--print-logs"} <= set(run)
    assert run[run.index("--format") + 1] == "json"
    assert run[run.index("--model") + 1] == f"probe/{scenario.model}"
    assert run[-2:] == ["--", scenario.task]
    assert f"> {PROBE_DIR}/events.jsonl 2> {PROBE_DIR}/stderr.log" in script
    assert script.endswith(f"cat {PROBE_DIR}/stderr.log >&2; exit $code")
    assert "PROBE_DONE" not in script


@pytest.mark.parametrize(
    ("protocol", "package"),
    [("chat", "@ai-sdk/openai-compatible"), ("responses", "@ai-sdk/openai"), ("messages", "@ai-sdk/anthropic")],
)
def test_kilo_json_names_the_provider_package_of_the_protocol(protocol: str, package: str) -> None:
    ctx = LaunchContext()
    config = _config(protocol)
    provider = config["provider"]["probe"]  # type: ignore[index]
    assert provider["npm"] == package
    assert (provider["options"]["baseURL"], provider["options"]["apiKey"]) == (ctx.base_url, ctx.api_key)
    assert list(provider["models"]) == ["probe-model"]
    assert (config["model"], config["enabled_providers"], config["autoupdate"]) == (
        "probe/probe-model",
        ["probe"],
        False,
    )


def test_no_prompt_and_no_side_agent() -> None:
    config = _config()
    assert config["permission"] == {"bash": "allow", "edit": "allow", "external_directory": "allow"}
    assert config["agent"] == {"title": {"disable": True}, "summary": {"disable": True}}
    assert config["$schema"] == "https://app.kilo.ai/config.json"


def test_every_folder_of_kilo_is_its_own_below_home_and_what_is_collected_is_in_it() -> None:
    env = get_harness("kilo").launch(load_scenario("tool_success"), LaunchContext()).environment
    xdg = {k: v for k, v in env.items() if k.startswith("XDG_")}
    assert set(xdg) == {"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"}
    assert all(v.startswith(f"{HOME}/") for v in xdg.values())
    assert f"{xdg['XDG_CONFIG_HOME']}/kilo/kilo.json" == CONFIG
    assert f"{xdg['XDG_DATA_HOME']}/kilo" == DATA_DIR
    assert get_harness("kilo").native_paths == (DATA_DIR, PROBE_DIR)


def test_no_daemon_no_telemetry_no_phoning_home_and_its_store_on_disk() -> None:
    env = get_harness("kilo").launch(load_scenario("tool_success"), LaunchContext()).environment
    assert (env["KILO_NO_DAEMON"], env["KILO_TELEMETRY_LEVEL"], env["KILO_DISABLE_CHANNEL_DB"]) == ("1", "off", "1")
    for var in (
        "KILO_DISABLE_MODELS_FETCH",
        "KILO_DISABLE_AUTOUPDATE",
        "KILO_DISABLE_DEFAULT_PLUGINS",
        "KILO_DISABLE_SHARE",
        "KILO_DISABLE_SESSION_INGEST",
        "KILO_DISABLE_PRESENCE",
    ):
        assert env[var] == "1"
    assert env["NO_PROXY"] == "localhost,127.0.0.1"
    # KILO_DB=:memory: would leave no session store to collect (checked on 7.7.7: no kilo.db at all).
    assert "KILO_DB" not in env


def test_version_is_the_semver_kilo_prints() -> None:
    h = get_harness("kilo")
    assert h.version_command == ("kilo", "--version")
    assert h.parse_version("7.7.7\n") == "kilo 7.7.7"


def test_image_pins_kilo_with_a_lock_file_keeping_its_platform_binary() -> None:
    assert parent_of("kilo") == "node"
    pkg = package_of("kilo")
    assert pkg is not None and (pkg.registry, pkg.name, pkg.prefix) == ("npm", "@kilocode/cli", "/opt/kilo")
    assert pinned_version(IMAGE, pkg) == "7.7.7"
    lock = json.loads((IMAGE / "package-lock.json").read_text())["packages"]
    assert lock["node_modules/@kilocode/cli"]["version"] == "7.7.7"
    binary = lock["node_modules/@kilocode/cli-linux-x64"]
    assert (binary["version"], binary["optional"]) == ("7.7.7", True)
    assert all(p["integrity"].startswith("sha512-") for k, p in lock.items() if k)
    dockerfile = (IMAGE / "Dockerfile").read_text()
    assert "npm ci" in dockerfile and "--omit=optional" not in dockerfile and "--ignore-scripts" not in dockerfile
    assert "npm_config_cafile=/usr/local/share/harness-probe/build-ca-bundle.pem" in dockerfile
    assert dockerfile.rstrip().splitlines()[-2:] == ["USER probe", "WORKDIR /home/probe"]
