"""The Codex launch preset: command line, config.toml, retry and timeout settings, native paths, pinned image."""

from __future__ import annotations

import json
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from orchestrator.harnesses import LaunchContext, get_harness
from orchestrator.harnesses.codex import CODEX_HOME, CodexHarness
from orchestrator.scenarios import load_scenario

ROOT = Path(__file__).resolve().parents[3]
IMAGE = ROOT / "images" / "codex"


def _config(options: dict[str, str] | None = None) -> dict[str, object]:
    launch = get_harness("codex", options).launch(load_scenario("tool_success"), LaunchContext())
    return tomllib.loads(launch.files[f"{CODEX_HOME}/config.toml"].decode())


def test_registered_under_its_name() -> None:
    h = get_harness("codex")
    assert isinstance(h, CodexHarness)
    assert (h.name, h.image, h.protocols) == ("codex", "codex", ("responses",))
    with pytest.raises(ValueError, match="has no option"):
        get_harness("codex", {"mode": "x"})


def test_exec_command_line_with_json_events_on_a_collected_file() -> None:
    scenario = load_scenario("tool_success")
    launch = get_harness("codex").launch(scenario, LaunchContext())
    shell, flag, script, name, *codex = launch.command
    assert (shell, flag, name) == ("sh", "-c", "codex")
    # stdout (the events) goes to a file under HOME that is collected; stdin is closed; stderr is left alone.
    assert script == (
        'mkdir -p /home/probe/.codex-probe && exec "$@" </dev/null >/home/probe/.codex-probe/events.jsonl'
    )
    assert codex == [
        "codex",
        "exec",
        "--strict-config",
        "--skip-git-repo-check",
        "--dangerously-bypass-approvals-and-sandbox",
        "--json",
        scenario.task,
    ]
    # The expectations never reach the harness: only the task does.
    assert "PROBE_DONE" not in " ".join(launch.command)
    assert launch.environment == {"CODEX_HOME": CODEX_HOME, "PROBE_API_KEY": LaunchContext().api_key}


def test_config_points_at_the_scripted_provider_with_approvals_and_telemetry_off() -> None:
    ctx = LaunchContext()
    launch = get_harness("codex").launch(load_scenario("tool_success"), ctx)
    assert list(launch.files) == [f"{CODEX_HOME}/config.toml"]
    assert all(p.startswith(ctx.home + "/") for p in launch.files)
    config = _config()
    assert config["model"] == "probe-model"
    assert config["model_provider"] == "probe"
    assert (config["approval_policy"], config["sandbox_mode"]) == ("never", "danger-full-access")
    assert config["check_for_update_on_startup"] is False
    assert config["analytics"] == {"enabled": False}
    assert config["feedback"] == {"enabled": False}
    assert config["otel"] == {"exporter": "none"}
    assert config["model_providers"] == {
        "probe": {
            "name": "probe",
            "base_url": ctx.base_url,
            "env_key": "PROBE_API_KEY",
            "wire_api": "responses",
            "request_max_retries": 4,
            "stream_max_retries": 5,
            "stream_idle_timeout_ms": 20000,
        }
    }


def test_a_withheld_reply_is_abandoned_well_inside_the_episode() -> None:
    provider = _config()["model_providers"]["probe"]  # type: ignore[index]
    # Every stream attempt withheld until the idle timeout: the last attempt still ends inside 300 s.
    assert (provider["stream_max_retries"] + 1) * provider["stream_idle_timeout_ms"] / 1000 < 300


def test_retry_and_timeout_options() -> None:
    provider = _config({"stream_idle_timeout_ms": "5000", "request_max_retries": "0", "stream_max_retries": "2"})[
        "model_providers"
    ]["probe"]  # type: ignore[index]
    assert (provider["stream_idle_timeout_ms"], provider["request_max_retries"], provider["stream_max_retries"]) == (
        5000,
        0,
        2,
    )
    with pytest.raises(ValueError, match="not a non-negative integer"):
        get_harness("codex", {"stream_max_retries": "-1"})


def test_a_model_name_with_quotes_stays_one_toml_string() -> None:
    scenario = load_scenario("tool_success")
    odd = replace(scenario, data={**scenario.data, "model": 'a"b\\c'})
    launch = get_harness("codex").launch(odd, LaunchContext())
    assert tomllib.loads(launch.files[f"{CODEX_HOME}/config.toml"].decode())["model"] == 'a"b\\c'


def test_native_paths_are_the_sessions_folder_and_the_events_file() -> None:
    assert CodexHarness.native_paths == (f"{CODEX_HOME}/sessions", "/home/probe/.codex-probe")


@pytest.mark.parametrize(
    ("output", "version"),
    [
        ("codex-cli 0.169.0\n", "codex-cli 0.169.0"),
        ("WARNING: proceeding, even though we could not create PATH aliases\ncodex-cli 0.169.0\n", "codex-cli 0.169.0"),
        ("", ""),
    ],
)
def test_version_string(output: str, version: str) -> None:
    assert get_harness("codex").parse_version(output) == version


def test_image_installs_the_exact_version_from_the_lock() -> None:
    assert (IMAGE / "PARENT").read_text().strip() == "node"
    package = json.loads((IMAGE / "package.json").read_text())
    assert package["dependencies"] == {"@openai/codex": "0.169.0"}
    lock = json.loads((IMAGE / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/@openai/codex"]["version"] == "0.169.0"
    # The native binary is an optional platform package: it must be locked too.
    linux = lock["packages"]["node_modules/@openai/codex-linux-x64"]
    assert (linux["version"], linux["optional"]) == ("0.169.0-linux-x64", True)
    assert all("integrity" in p for name, p in lock["packages"].items() if name)
    dockerfile = (IMAGE / "Dockerfile").read_text()
    assert "npm ci" in dockerfile and "--omit=optional" not in dockerfile
    assert "USER probe" in dockerfile
    # The build CA is trusted by the install step only, never exported to the run-time environment.
    assert "ENV NODE_EXTRA_CA_CERTS" not in dockerfile and "ENV npm_config_cafile" not in dockerfile
