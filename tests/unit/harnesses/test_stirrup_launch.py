"""The Stirrup launch preset: our driver's command line and environment, the finish-tool profile, pinned image."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from orchestrator.harnesses import LaunchContext, get_harness
from orchestrator.harnesses.stirrup import PROBE_DIR, StirrupHarness
from orchestrator.scenarios import load_scenario

ROOT = Path(__file__).resolve().parents[3]
IMAGE = ROOT / "images" / "stirrup"


def test_registered_under_its_name_with_its_options() -> None:
    h = get_harness("stirrup")
    assert isinstance(h, StirrupHarness)
    assert (h.name, h.image, h.protocols) == ("stirrup", "stirrup", ("chat",))
    assert (h.request_timeout, h.max_retries) == (15, 2)
    none = get_harness("stirrup", {"max_retries": "0"})
    assert isinstance(none, StirrupHarness) and none.max_retries == 0
    with pytest.raises(ValueError, match="has no option"):
        get_harness("stirrup", {"mode": "x"})
    with pytest.raises(ValueError, match="request_timeout"):
        get_harness("stirrup", {"request_timeout": "0"})


def test_the_driver_gets_the_task_alone_with_stdin_closed() -> None:
    scenario = load_scenario("tool_success")
    launch = get_harness("stirrup").launch(scenario, LaunchContext())
    assert launch.command == ["sh", "-c", 'exec "$@" </dev/null', "probe-stirrup", "probe-stirrup", scenario.task]
    # The expectations never reach the harness: only the task does.
    assert "PROBE_DONE" not in " ".join(launch.command) + " ".join(launch.environment.values())
    assert launch.files == {}


def test_environment_points_at_the_provider_with_no_search_keys() -> None:
    ctx = LaunchContext()
    env = get_harness("stirrup", {"request_timeout": "9"}).launch(load_scenario("tool_success"), ctx).environment
    assert env["PROBE_BASE_URL"] == ctx.base_url and env["PROBE_API_KEY"] == ctx.api_key
    assert env["PROBE_MODEL"] == "probe-model" and env["PROBE_REQUEST_TIMEOUT"] == "9"
    assert env["PROBE_RECORD"] == f"{PROBE_DIR}/run.json"
    assert env["PROBE_OUTPUT_DIR"].startswith(PROBE_DIR + "/")
    assert not {"BRAVE_API_KEY", "TAVILY_API_KEY", "OPENROUTER_API_KEY"} & set(env)


def test_the_final_answer_goes_through_the_finish_tool() -> None:
    assert get_harness("stirrup").harness_profile() == {
        "final_answer": {"via": "tool", "tool": "finish", "argument": "reason"}
    }


def test_version_is_the_last_line_naming_one() -> None:
    assert get_harness("stirrup").parse_version("warning: x\nstirrup 0.2.1\n") == "stirrup 0.2.1"


def test_the_image_pins_stirrup_with_hashes_and_carries_the_driver() -> None:
    lock = (IMAGE / "requirements.lock").read_text()
    assert re.search(r"^stirrup==0\.2\.1 \\$", lock, re.MULTILINE)
    pins = re.findall(r"^([A-Za-z0-9_.-]+)==\S+ \\$", lock, re.MULTILINE)
    assert pins and lock.count("--hash=sha256:") >= len(pins)
    dockerfile = (IMAGE / "Dockerfile").read_text()
    assert "--require-hashes" in dockerfile and "probe_stirrup.py" in dockerfile
    assert (IMAGE / "probe_stirrup.py").is_file()
