"""The Hermes launch preset: command line, config.yaml, timeouts, native paths, version parsing, pinned image."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from orchestrator.harnesses import LaunchContext, get_harness
from orchestrator.harnesses.hermes import HERMES_HOME, HermesHarness
from orchestrator.scenarios import load_scenario

ROOT = Path(__file__).resolve().parents[3]
IMAGE = ROOT / "images" / "hermes"


def test_registered_under_its_name() -> None:
    h = get_harness("hermes")
    assert isinstance(h, HermesHarness)
    assert (h.name, h.image, h.protocols) == ("hermes", "hermes", ("chat",))
    with pytest.raises(ValueError, match="has no option"):
        get_harness("hermes", {"mode": "x"})


def test_one_shot_command_with_the_venv_entry_point_and_only_the_terminal_tool() -> None:
    scenario = load_scenario("tool_success")
    launch = get_harness("hermes").launch(scenario, LaunchContext())
    assert launch.command == ["/opt/hermes/bin/hermes", "-z", scenario.task, "--yolo", "-t", "terminal"]
    # The expectations never reach the harness: only the task does.
    assert "PROBE_DONE" not in " ".join(launch.command)


def test_config_points_at_the_scripted_provider_and_turns_side_calls_off() -> None:
    ctx = LaunchContext()
    scenario = load_scenario("tool_success")
    launch = get_harness("hermes").launch(scenario, ctx)
    assert list(launch.files) == [f"{HERMES_HOME}/config.yaml"]
    assert all(p.startswith(ctx.home + "/") for p in launch.files)
    config = yaml.safe_load(launch.files[f"{HERMES_HOME}/config.yaml"])
    assert config["model"]["provider"] == "custom"
    assert config["model"]["base_url"] == "http://provider:8080/v1"
    assert config["model"]["api_key"] == ctx.api_key
    assert config["model"]["default"] == scenario.model
    assert config["compression"]["enabled"] is False
    assert config["memory"] == {"memory_enabled": False, "user_profile_enabled": False}
    assert config["auxiliary"]["title_generation"]["enabled"] is False
    assert config["curator"]["enabled"] is False
    assert config["terminal"] == {"backend": "local", "cwd": ctx.workdir}


def test_short_request_deadlines_and_a_fixed_zone() -> None:
    env = get_harness("hermes").launch(load_scenario("harness_deadline"), LaunchContext()).environment
    for var in ("HERMES_STREAM_READ_TIMEOUT", "HERMES_STREAM_STALE_TIMEOUT", "HERMES_API_CALL_STALE_TIMEOUT"):
        assert 0 < float(env[var]) <= 30
    assert env["HERMES_HOME"] == HERMES_HOME
    assert env["TZ"] == "UTC"


def test_native_paths_are_the_store_its_wal_logs_and_request_dumps() -> None:
    paths = get_harness("hermes").native_paths
    assert {Path(p).name for p in paths} == {"state.db", "state.db-wal", "state.db-shm", "logs", "sessions"}
    assert all(p.startswith(HERMES_HOME + "/") for p in paths)


def test_version_is_the_line_naming_hermes() -> None:
    out = "Hermes Agent v0.19.0 (2026.7.20)\nInstall directory: /opt\nPython: 3.13.5\nOpenAI SDK: 2.24.0\n"
    h = get_harness("hermes")
    assert h.parse_version(out) == "Hermes Agent v0.19.0 (2026.7.20)"
    assert h.parse_version("something else\n") == "something else"
    assert h.version_command == ("/opt/hermes/bin/hermes", "--version")


def test_image_pins_hermes_and_installs_only_hashed_wheels() -> None:
    lock = (IMAGE / "requirements.lock").read_text()
    assert re.search(r"^hermes-agent==0\.19\.0 \\$", lock, re.M)
    pins = re.findall(r"^([a-z0-9._-]+)==\S+ \\$", lock, re.M)
    blocks = re.split(r"^(?=[a-z0-9._-]+==)", lock, flags=re.M)[1:]
    assert len(pins) == len(blocks) and all("--hash=sha256:" in b for b in blocks)
    dockerfile = (IMAGE / "Dockerfile").read_text()
    assert "--require-hashes" in dockerfile and "ARG BASE_IMAGE" in dockerfile and "USER probe" in dockerfile
