"""The Pi launch preset: command line, models.json per protocol, settings.json, native paths, version, pinned image."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from orchestrator.harnesses import LaunchContext, get_harness
from orchestrator.harnesses.pi import PI_APIS, PROBE_DIR, PiHarness
from orchestrator.images import parent_of
from orchestrator.scenarios import load_scenario

ROOT = Path(__file__).resolve().parents[3]
IMAGE = ROOT / "images" / "pi"
AGENT = "/home/probe/.pi/agent"


def test_registered_under_its_name_with_three_protocols() -> None:
    h = get_harness("pi")
    assert isinstance(h, PiHarness)
    assert (h.name, h.image, h.protocols) == ("pi", "pi", ("chat", "responses", "messages"))
    with pytest.raises(ValueError, match="has no option"):
        get_harness("pi", {"mode": "x"})
    with pytest.raises(ValueError, match="protocol='grpc'"):
        get_harness("pi", {"protocol": "grpc"})
    with pytest.raises(ValueError, match="provider_retries='-1'"):
        get_harness("pi", {"provider_retries": "-1"})


def test_print_mode_with_the_session_and_event_stream_where_they_are_collected() -> None:
    scenario = load_scenario("tool_success")
    launch = get_harness("pi").launch(scenario, LaunchContext())
    assert launch.command[:2] == ["sh", "-c"]
    script = launch.command[2]
    assert script.endswith(f"> {PROBE_DIR}/events.jsonl")
    pi = shlex.split(script.split(" && exec ", 1)[1].rsplit(" > ", 1)[0])
    assert pi[:4] == ["pi", "-p", "--mode", "json"]
    assert pi[pi.index("--provider") + 1] == "probe"
    assert pi[pi.index("--model") + 1] == scenario.model
    assert pi[pi.index("--session-dir") + 1] == f"{PROBE_DIR}/sessions"
    assert {"--no-extensions", "--no-context-files", "--offline"} <= set(pi)
    assert pi[-1] == scenario.task
    # The expectations never reach the harness: only the task does.
    assert "PROBE_DONE" not in script
    assert launch.environment == {"PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1"}


@pytest.mark.parametrize(
    ("protocol", "base"),
    [
        ("chat", "http://provider:8080/v1"),
        ("responses", "http://provider:8080/v1"),
        ("messages", "http://provider:8080"),
    ],
)
def test_models_json_names_the_protocol_and_the_scripted_provider(protocol: str, base: str) -> None:
    ctx = LaunchContext()
    launch = get_harness("pi", {"protocol": protocol}).launch(load_scenario("tool_success"), ctx)
    assert sorted(launch.files) == [f"{AGENT}/models.json", f"{AGENT}/settings.json"]
    provider = json.loads(launch.files[f"{AGENT}/models.json"])["providers"]["probe"]
    assert (provider["api"], provider["baseUrl"], provider["apiKey"]) == (PI_APIS[protocol], base, ctx.api_key)
    assert [m["id"] for m in provider["models"]] == ["probe-model"]


def test_settings_turn_compaction_off_and_bound_the_provider_sdk() -> None:
    launch = get_harness("pi").launch(load_scenario("retry_429"), LaunchContext())
    settings = json.loads(launch.files[f"{AGENT}/settings.json"])
    assert settings["compaction"] == {"enabled": False}
    assert settings["retry"]["maxRetries"] == 3
    assert 0 < settings["retry"]["provider"]["timeoutMs"] <= 60_000
    assert "maxRetries" not in settings["retry"]["provider"]  # the SDK's own default, as shipped
    zero = get_harness("pi", {"provider_retries": "0"}).launch(load_scenario("retry_429"), LaunchContext())
    assert json.loads(zero.files[f"{AGENT}/settings.json"])["retry"]["provider"]["maxRetries"] == 0


def test_native_paths_are_our_probe_dir_and_pis_agent_dir() -> None:
    assert get_harness("pi").native_paths == (PROBE_DIR, AGENT)


def test_version_is_the_semver_pi_prints() -> None:
    h = get_harness("pi")
    assert h.version_command == ("pi", "--version")
    assert h.parse_version("0.73.1\n") == "pi 0.73.1"
    assert h.parse_version("no version here\n") == "no version here"


def test_image_pins_pi_with_a_lock_file_and_npm_ci() -> None:
    assert parent_of("pi") == "node"
    package = json.loads((IMAGE / "package.json").read_text())
    assert package["dependencies"] == {"@mariozechner/pi-coding-agent": "0.73.1"}
    lock = json.loads((IMAGE / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/@mariozechner/pi-coding-agent"]["version"] == "0.73.1"
    assert all("integrity" in p for name, p in lock["packages"].items() if name)
    dockerfile = (IMAGE / "Dockerfile").read_text()
    assert "npm ci" in dockerfile and "--omit=optional" not in dockerfile
    assert "npm_config_cafile=/usr/local/share/harness-probe/build-ca-bundle.pem" in dockerfile
    assert dockerfile.rstrip().splitlines()[-2:] == ["USER probe", "WORKDIR /home/probe"]
