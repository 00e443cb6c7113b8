"""The NOOA launch preset: nemo-harbor's command line, its fixed log paths made writable, the return_result profile."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from orchestrator.harnesses import LaunchContext, get_harness
from orchestrator.harnesses.nooa import ANSWER_DIR, LOGS_DIR, NooaHarness
from orchestrator.scenarios import load_scenario

ROOT = Path(__file__).resolve().parents[3]
IMAGE = ROOT / "images" / "nooa"


def test_registered_under_its_name_without_options() -> None:
    h = get_harness("nooa")
    assert isinstance(h, NooaHarness)
    assert (h.name, h.image, h.protocols) == ("nooa", "nooa", ("chat",))
    with pytest.raises(ValueError, match="has no option"):
        get_harness("nooa", {"mode": "x"})


def test_the_runner_gets_the_task_model_and_provider_with_stdin_closed() -> None:
    scenario = load_scenario("tool_success")
    ctx = LaunchContext()
    launch = get_harness("nooa").launch(scenario, ctx)
    assert launch.command[:5] == ["sh", "-c", 'exec "$@" </dev/null', "nemo-harbor", "nemo-harbor"]
    argv = launch.command[5:]
    options = dict(zip(argv[::2], argv[1::2], strict=True))
    assert options == {
        "--instruction": scenario.task,
        "--model": "openai/probe-model",
        "--api-base": ctx.base_url,
        "--agent-type": "bench",
        "--working-dir": ctx.workdir,
    }
    # The expectations never reach the harness: only the task does.
    assert "PROBE_DONE" not in " ".join(launch.command) + " ".join(launch.environment.values())
    assert launch.environment["OPENAI_API_KEY"] == ctx.api_key
    assert launch.environment["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    assert "OTLP_ENDPOINT" not in launch.environment and launch.files == {}


def test_the_fixed_log_paths_are_writable_and_collected() -> None:
    h = get_harness("nooa")
    assert h.native_paths == (LOGS_DIR, ANSWER_DIR) == ("/logs/agent", "/app")
    assert {LOGS_DIR, ANSWER_DIR, "/home/probe", "/tmp"} == set(h.writable_paths)


def test_the_final_answer_goes_through_return_result() -> None:
    assert get_harness("nooa").harness_profile() == {
        "final_answer": {"via": "tool", "tool": "return_result", "argument": "result"}
    }


def test_version_is_the_last_line_naming_one() -> None:
    assert get_harness("nooa").parse_version("warning: x\nnooa 0.0.10\n") == "nooa 0.0.10"
    assert get_harness("nooa").parse_version("nothing here") == ""


def test_the_image_pins_the_three_packages_with_hashes_and_keeps_litellm_offline() -> None:
    lock = (IMAGE / "requirements.lock").read_text()
    for package in ("nooa", "nooa-bench", "nooa-cli"):
        assert re.search(rf"^{package}==0\.0\.10 \\$", lock, re.MULTILINE), package
    pins = re.findall(r"^([A-Za-z0-9_.-]+)==\S+ \\$", lock, re.MULTILINE)
    assert pins and lock.count("--hash=sha256:") >= len(pins)
    dockerfile = (IMAGE / "Dockerfile").read_text()
    assert "--require-hashes" in dockerfile and "USER probe" in dockerfile
    assert "LITELLM_LOCAL_MODEL_COST_MAP=True" in dockerfile.split("USER probe")[0].rsplit("ENV", 1)[-1]
