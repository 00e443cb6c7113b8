"""The CrewAI launch preset: our driver's command and environment, CrewAI's opt-outs, native paths, pinned image."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.harnesses import LaunchContext, get_harness
from orchestrator.harnesses.crewai import PROBE_DIR, PROTOCOLS, CrewAIHarness
from orchestrator.images import parent_of
from orchestrator.scenarios import load_scenario
from orchestrator.variants.packages import package_of, pinned_version

ROOT = Path(__file__).resolve().parents[3]
IMAGE = ROOT / "images" / "crewai"


def test_registered_under_its_name_with_three_protocols() -> None:
    h = get_harness("crewai")
    assert isinstance(h, CrewAIHarness)
    assert (h.name, h.image, h.protocols) == ("crewai", "crewai", ("chat", "responses", "messages"))
    with pytest.raises(ValueError, match="protocol='gemini'"):
        get_harness("crewai", {"protocol": "gemini"})
    with pytest.raises(ValueError, match="max_retries='-1'"):
        get_harness("crewai", {"max_retries": "-1"})


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_driver_gets_the_task_as_its_argument_and_the_rest_from_the_environment(protocol: str) -> None:
    scenario = load_scenario("tool_success")
    ctx = LaunchContext()
    launch = get_harness("crewai", {"protocol": protocol}).launch(scenario, ctx)
    # stdin closed, the task one argument: no shell ever reads it.
    assert launch.command == ["sh", "-c", 'exec "$@" </dev/null', "probe-crewai", "probe-crewai", scenario.task]
    env = launch.environment
    assert (env["PROBE_PROTOCOL"], env["PROBE_MODEL"], env["PROBE_BASE_URL"]) == (protocol, "probe-model", ctx.base_url)
    assert env["PROBE_API_KEY"] == ctx.api_key
    assert (env["PROBE_REQUEST_TIMEOUT"], env["PROBE_MAX_RETRIES"]) == ("15", "2")  # the SDK's retries as shipped
    assert env["PROBE_RECORD"] == f"{PROBE_DIR}/run.json" and env["PROBE_EVENTS"] == f"{PROBE_DIR}/events.jsonl"
    assert "PROBE_DONE" not in str(launch)  # the expectations never reach the harness
    assert launch.files == {}


def test_crewais_own_telemetry_and_trace_upload_are_off() -> None:
    env = get_harness("crewai").launch(load_scenario("tool_success"), LaunchContext()).environment
    assert {k: env[k] for k in ("CREWAI_DISABLE_TELEMETRY", "OTEL_SDK_DISABLED", "CREWAI_TRACING_ENABLED")} == {
        "CREWAI_DISABLE_TELEMETRY": "true",
        "OTEL_SDK_DISABLED": "true",
        "CREWAI_TRACING_ENABLED": "false",
    }


def test_options_reach_the_driver() -> None:
    h = get_harness("crewai", {"max_retries": "0", "request_timeout": "30"})
    env = h.launch(load_scenario("retry_429"), LaunchContext()).environment
    assert (env["PROBE_MAX_RETRIES"], env["PROBE_REQUEST_TIMEOUT"]) == ("0", "30")


def test_native_paths_are_the_drivers_folder_and_crewais_task_output_store() -> None:
    assert get_harness("crewai").native_paths == (PROBE_DIR, "/home/probe/.local/share/work")


def test_version_names_the_package() -> None:
    h = get_harness("crewai")
    assert h.version_argv()[0] == "/opt/crewai/bin/python"
    assert h.parse_version("crewai 1.15.30\n") == "crewai 1.15.30"


def test_image_pins_the_release_with_hashes_and_ships_the_driver() -> None:
    assert parent_of("crewai") == "base"
    package = package_of("crewai")
    assert package is not None and package.prefix == "/opt/crewai"
    assert pinned_version(IMAGE, package) == "1.15.30"
    lock = (IMAGE / "requirements.lock").read_text()
    assert "crewai==1.15.30 \\" in lock and "anthropic==" in lock and "--hash=sha256:" in lock
    assert "litellm" not in lock  # a custom base URL takes CrewAI's native providers, never its LiteLLM fallback
    dockerfile = (IMAGE / "Dockerfile").read_text()
    assert "--require-hashes" in dockerfile and "COPY probe_crewai.py" in dockerfile and "USER probe" in dockerfile


def test_the_driver_never_sees_the_wire() -> None:
    # Self-reported means CrewAI's own events and return value: nothing in the driver hooks HTTP.
    driver = (IMAGE / "probe_crewai.py").read_text()
    for hook in ("httpx", "event_hooks", "http_client", "requests", "urllib", "socket"):
        assert hook not in driver
