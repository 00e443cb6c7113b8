"""The Gemini CLI launch preset: command line, settings.json (auth pinned, no usage statistics, no update check,
OpenTelemetry to a file), environment, native paths, version, pinned image."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.harnesses import LaunchContext, get_harness
from orchestrator.harnesses.gemini_cli import GEMINI_DIR, PROBE_DIR, TELEMETRY_FILE, GeminiCliHarness
from orchestrator.images import parent_of
from orchestrator.scenarios import load_scenario
from orchestrator.variants.packages import PACKAGES

ROOT = Path(__file__).resolve().parents[3]
IMAGE = ROOT / "images" / "gemini-cli"
SETTINGS = f"{GEMINI_DIR}/settings.json"


def test_registered_under_its_name_speaking_gemini_only() -> None:
    h = get_harness("gemini-cli")
    assert isinstance(h, GeminiCliHarness)
    assert (h.name, h.image, h.protocols) == ("gemini-cli", "gemini-cli", ("gemini",))
    with pytest.raises(ValueError, match="has no option"):
        get_harness("gemini-cli", {"protocol": "chat"})


def test_headless_yolo_prompt_with_the_scenarios_model() -> None:
    scenario = load_scenario("tool_success")
    launch = get_harness("gemini-cli").launch(scenario, LaunchContext())
    assert launch.command[:2] == ["sh", "-c"] and launch.command[2].startswith(f"mkdir -p {PROBE_DIR}/tmp && exec")
    assert launch.command[4:] == ["gemini", "--yolo", "--model=probe-model", f"--prompt={scenario.task}"]


@pytest.mark.parametrize("base_url", ["http://provider:8080/v1", "http://provider:8080/v1/"])
def test_endpoint_key_trust_and_tmpdir_in_the_environment(base_url: str) -> None:
    ctx = LaunchContext(base_url=base_url)
    env = get_harness("gemini-cli").launch(load_scenario("tool_success"), ctx).environment
    assert env["GOOGLE_GEMINI_BASE_URL"] == "http://provider:8080"  # google-genai adds /v1beta/models/... itself
    assert env["GEMINI_API_KEY"] == ctx.api_key
    assert env["GEMINI_CLI_TRUST_WORKSPACE"] == "true"
    assert env["TMPDIR"] == f"{PROBE_DIR}/tmp"
    assert env["GEMINI_CLI_NO_RELAUNCH"] == "true"  # one process, which gets the deadline's SIGTERM itself


def test_settings_pin_the_auth_type_and_turn_phoning_home_off() -> None:
    launch = get_harness("gemini-cli").launch(load_scenario("tool_success"), LaunchContext())
    assert list(launch.files) == [SETTINGS]
    settings = json.loads(launch.files[SETTINGS])
    assert settings["security"] == {"auth": {"selectedType": "gemini-api-key"}}
    assert settings["privacy"] == {"usageStatisticsEnabled": False}
    assert settings["general"] == {"enableAutoUpdate": False, "enableAutoUpdateNotification": False}
    assert settings["telemetry"] == {"enabled": True, "target": "local", "outfile": TELEMETRY_FILE, "logPrompts": True}


def test_telemetry_can_be_left_off() -> None:
    launch = get_harness("gemini-cli", {"telemetry": "false"}).launch(load_scenario("tool_success"), LaunchContext())
    assert "telemetry" not in json.loads(launch.files[SETTINGS])


def test_native_paths_are_its_home_and_our_probe_dir() -> None:
    h = get_harness("gemini-cli")
    assert h.native_paths == (GEMINI_DIR, PROBE_DIR) and TELEMETRY_FILE.startswith(PROBE_DIR + "/")


def test_version_is_the_semver_gemini_prints() -> None:
    h = get_harness("gemini-cli")
    assert h.version_command == ("gemini", "--version")
    assert h.parse_version("0.61.0\n") == "gemini-cli 0.61.0"


def test_image_pins_gemini_cli_with_a_hash_checked_lock_and_no_install_scripts() -> None:
    assert parent_of("gemini-cli") == "node"
    assert PACKAGES["gemini-cli"].name == "@google/gemini-cli"
    package = json.loads((IMAGE / "package.json").read_text())
    assert package["dependencies"] == {"@google/gemini-cli": "0.61.0"}
    lock = json.loads((IMAGE / "package-lock.json").read_text())["packages"]
    assert lock["node_modules/@google/gemini-cli"]["version"] == "0.61.0"
    assert all(entry.get("integrity", "").startswith("sha512-") for name, entry in lock.items() if name)
    dockerfile = (IMAGE / "Dockerfile").read_text()
    assert "npm ci --no-audit --no-fund --ignore-scripts" in dockerfile
    assert dockerfile.rstrip().splitlines()[-2:] == ["USER probe", "WORKDIR /home/probe"]
