"""The Copilot CLI launch preset: prompt mode on the BYOK provider per protocol, opt-outs, native paths, version,
the pinned image that is built locally only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.harnesses import LaunchContext, get_harness
from orchestrator.harnesses.copilot import COPILOT_HOME, PROBE_DIR, CopilotHarness
from orchestrator.images import local_only, parent_of
from orchestrator.scenarios import load_scenario
from orchestrator.variants import package_of, pinned_version

ROOT = Path(__file__).resolve().parents[3]
IMAGE = ROOT / "images" / "copilot"


def test_registered_under_its_name_with_three_protocols() -> None:
    h = get_harness("copilot")
    assert isinstance(h, CopilotHarness)
    assert (h.name, h.image, h.protocols) == ("copilot", "copilot", ("chat", "responses", "messages"))
    with pytest.raises(ValueError, match="has no option"):
        get_harness("copilot", {"mode": "x"})
    with pytest.raises(ValueError, match="protocol='azure'"):
        get_harness("copilot", {"protocol": "azure"})
    with pytest.raises(ValueError, match="opt_outs='maybe'"):
        get_harness("copilot", {"opt_outs": "maybe"})


def test_prompt_mode_with_every_tool_allowed_and_its_stream_where_it_is_collected() -> None:
    scenario = load_scenario("tool_success")
    launch = get_harness("copilot").launch(scenario, LaunchContext())
    assert launch.command[:2] == ["sh", "-c"]
    assert launch.command[2] == f'mkdir -p {PROBE_DIR} && exec "$@" </dev/null >{PROBE_DIR}/stream.jsonl'
    argv = launch.command[4:]
    assert argv[:3] == ["copilot", "-p", scenario.task]
    assert argv[argv.index("--output-format") + 1] == "json"
    assert argv[argv.index("--usage-output-file") + 1] == f"{PROBE_DIR}/usage.json"
    assert {"--yolo", "--no-custom-instructions", "--no-ask-user"} <= set(argv)
    # The expectations never reach the harness: only the task does.
    assert "PROBE_DONE" not in " ".join(launch.command) + json.dumps(launch.environment)
    assert launch.files == {}


@pytest.mark.parametrize(
    ("protocol", "kind", "wire", "base"),
    [
        ("chat", "openai", "completions", "http://provider:8080/v1"),
        ("responses", "openai", "responses", "http://provider:8080/v1"),
        ("messages", "anthropic", None, "http://provider:8080"),
    ],
)
def test_the_byok_provider_speaks_the_chosen_protocol(protocol: str, kind: str, wire: str | None, base: str) -> None:
    ctx = LaunchContext()
    env = get_harness("copilot", {"protocol": protocol}).launch(load_scenario("tool_success"), ctx).environment
    assert env["COPILOT_PROVIDER_BASE_URL"] == base
    assert (env["COPILOT_PROVIDER_TYPE"], env.get("COPILOT_PROVIDER_WIRE_API")) == (kind, wire)
    assert (env["COPILOT_PROVIDER_API_KEY"], env["COPILOT_MODEL"]) == (ctx.api_key, "probe-model")
    assert env["COPILOT_HOME"] == COPILOT_HOME
    # The BYOK path needs no GitHub login: no token of any kind is handed over.
    assert not {"GH_TOKEN", "GITHUB_TOKEN", "COPILOT_GITHUB_TOKEN"} & set(env)


def test_its_own_opt_outs_are_on_unless_asked_to_run_as_shipped() -> None:
    scenario = load_scenario("tool_success")
    on = get_harness("copilot").launch(scenario, LaunchContext())
    assert on.environment["COPILOT_OFFLINE"] == "true"
    assert {"--disable-client-telemetry", "--no-auto-update"} <= set(on.command)
    off = get_harness("copilot", {"opt_outs": "false"}).launch(scenario, LaunchContext())
    assert "COPILOT_OFFLINE" not in off.environment
    assert off.environment["COPILOT_AUTO_UPDATE"] == "true"  # the image's own `false` is for its version probe
    assert not {"--disable-client-telemetry", "--no-auto-update"} & set(off.command)


def test_native_paths_are_its_session_state_its_logs_and_our_stream() -> None:
    native = get_harness("copilot").native_paths
    assert native == (f"{COPILOT_HOME}/session-state", f"{COPILOT_HOME}/logs", PROBE_DIR)
    assert all(p.startswith("/home/probe/") for p in native)


def test_version_is_the_semver_copilot_prints() -> None:
    h = get_harness("copilot")
    assert h.version_command == ("copilot", "--version")
    printed = "GitHub Copilot CLI 1.0.102.\nRun 'copilot update' to check for updates.\n"
    assert h.parse_version(printed) == "copilot 1.0.102"
    assert h.parse_version("GitHub Copilot CLI 1.1.0-2.\n") == "copilot 1.1.0-2"
    assert h.parse_version("no version here\n") == "no version here"


def test_image_pins_copilot_with_a_lock_file_and_unpacks_it_at_build() -> None:
    assert parent_of("copilot") == "node"
    package = json.loads((IMAGE / "package.json").read_text())
    assert package["dependencies"] == {"@github/copilot": "1.0.102"}
    pkg = package_of("copilot")
    assert pkg is not None and (pkg.registry, pkg.name, pkg.prefix) == ("npm", "@github/copilot", "/opt/copilot")
    assert pinned_version(IMAGE, pkg) == "1.0.102"
    lock = json.loads((IMAGE / "package-lock.json").read_text())["packages"]
    assert lock["node_modules/@github/copilot"]["version"] == "1.0.102"
    assert lock["node_modules/@github/copilot-linux-x64"]["version"] == "1.0.102"
    assert all(p.get("integrity", "").startswith("sha512-") for name, p in lock.items() if name)
    dockerfile = (IMAGE / "Dockerfile").read_text()
    assert "npm ci --include=optional" in dockerfile
    assert "COPILOT_SEA_EXTRACT_ONLY=1 COPILOT_PKG_CACHE_HOME=/opt/copilot/cache" in dockerfile
    assert "ENV COPILOT_PKG_CACHE_HOME=/opt/copilot/cache COPILOT_AUTO_UPDATE=false" in dockerfile
    assert "USER probe" in dockerfile and "WORKDIR /home/probe" in dockerfile


def test_the_image_is_built_locally_only() -> None:
    why = local_only("copilot")
    assert why is not None and "LICENSE.md" in why and "standalone" in why
