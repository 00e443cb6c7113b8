"""The Cline launch preset: Cline's own `auth` step then the headless run, per protocol; settings, paths, image."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from orchestrator.harnesses import LaunchContext, get_harness
from orchestrator.harnesses.base import Harness
from orchestrator.harnesses.cline import CLINE_PROVIDERS, DATA_DIR, DEFAULT_DATA_DIR, PROBE_DIR, ClineHarness
from orchestrator.images import parent_of
from orchestrator.scenarios import load_scenario

ROOT = Path(__file__).resolve().parents[3]
IMAGE = ROOT / "images" / "cline"


def steps(protocol: str) -> list[list[str]]:
    """The launch script's commands, each split as the shell would (redirections left at the end)."""
    launch = get_harness("cline", {"protocol": protocol}).launch(load_scenario("tool_success"), LaunchContext())
    assert launch.command[:2] == ["sh", "-c"]
    return [shlex.split(part) for part in launch.command[2].split(" && ")]


def test_registered_under_its_name_with_three_protocols() -> None:
    h = get_harness("cline")
    assert isinstance(h, ClineHarness)
    assert (h.name, h.image, h.protocols) == ("cline", "cline", ("chat", "responses", "messages"))
    assert h.protocol == "chat"
    with pytest.raises(ValueError, match="protocol='grpc'"):
        get_harness("cline", {"protocol": "grpc"})


@pytest.mark.parametrize("protocol", ["chat", "responses"])
def test_cline_auth_stores_the_provider_with_the_base_url_then_the_run_uses_that_data_dir(protocol: str) -> None:
    ctx, scenario = LaunchContext(), load_scenario("tool_success")
    mkdir, auth, run = steps(protocol)
    assert mkdir == ["mkdir", "-p", PROBE_DIR]
    assert auth[:3] == ["cline", "auth", CLINE_PROVIDERS[protocol]]
    assert auth[auth.index("--baseurl") + 1] == ctx.base_url
    assert auth[auth.index("--apikey") + 1] == ctx.api_key
    assert auth[auth.index("--modelid") + 1] == scenario.model
    assert auth[auth.index("--data-dir") + 1] == DATA_DIR
    assert auth[-3:] == [">", f"{PROBE_DIR}/auth.log", "2>&1"]
    assert run[:5] == ["exec", "cline", "--json", "--auto-approve", "true"]
    assert run[run.index("--data-dir") + 1] == DATA_DIR
    # The task is the last argument, after `--`; the expectations never reach the harness.
    assert run[-4:] == ["--", scenario.task, ">", f"{PROBE_DIR}/events.jsonl"]
    assert "PROBE_DONE" not in " ".join(run)
    # No plan mode (the default is act), no yolo (it would change the tools the model is offered).
    assert not {"-p", "--plan", "-y", "--yolo", "-z", "--zen"} & set(run)


def test_messages_stores_the_base_url_auth_refuses_in_the_settings_auth_wrote() -> None:
    ctx = LaunchContext()
    _, auth, patch, run = steps("messages")
    assert auth[:3] == ["cline", "auth", "anthropic"] and "--baseurl" not in auth
    assert patch[:2] == ["node", "-e"]
    assert patch[3:] == [f"{DATA_DIR}/settings/providers.json", "anthropic", ctx.base_url]
    assert run[1] == "cline"


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed here")
def test_the_base_url_patch_adds_base_url_to_the_stored_anthropic_settings(tmp_path: Path) -> None:
    # What `cline auth anthropic --apikey K --modelid M --data-dir D` wrote in a real run (3.0.65).
    stored = {
        "version": 1,
        "lastUsedProvider": "anthropic",
        "modes": {},
        "providers": {
            "anthropic": {
                "settings": {"provider": "anthropic", "apiKey": "sk-x", "model": "probe-model"},
                "updatedAt": "2026-12-06T02:23:13.952Z",
                "tokenSource": "manual",
            }
        },
    }
    path = tmp_path / "providers.json"
    path.write_text(json.dumps(stored))
    patch = steps("messages")[2]
    subprocess.run([*patch[:3], str(path), *patch[4:]], check=True, timeout=60)
    settings = json.loads(path.read_text())["providers"]["anthropic"]["settings"]
    assert settings == {**stored["providers"]["anthropic"]["settings"], "baseUrl": LaunchContext().base_url}


def test_telemetry_is_opted_out_in_both_data_dirs_and_no_update_check_runs() -> None:
    launch = get_harness("cline").launch(load_scenario("tool_success"), LaunchContext())
    assert sorted(launch.files) == sorted(
        [f"{DATA_DIR}/settings/global-settings.json", f"{DEFAULT_DATA_DIR}/settings/global-settings.json"]
    )
    for content in launch.files.values():
        assert json.loads(content) == {"telemetryOptOut": True, "autoUpdateEnabled": False}
    assert launch.environment == {"CLINE_NO_AUTO_UPDATE": "1"}


def test_native_paths_lie_below_a_writable_path() -> None:
    h: Harness = get_harness("cline")
    assert h.native_paths == (PROBE_DIR,)
    assert DATA_DIR.startswith(PROBE_DIR + "/")
    assert all(any(p.startswith(w + "/") for w in h.writable_paths) for p in (*h.native_paths, DEFAULT_DATA_DIR))


def test_version_is_the_semver_cline_prints() -> None:
    h = get_harness("cline")
    assert h.version_command == ("cline", "--version")
    assert h.parse_version("3.0.65\n") == "cline 3.0.65"
    assert h.parse_version("no version here\n") == "no version here"


def test_image_pins_cline_with_a_lock_file_and_npm_ci() -> None:
    assert parent_of("cline") == "node"
    package = json.loads((IMAGE / "package.json").read_text())
    assert package["dependencies"] == {"cline": "3.0.65"}
    lock = json.loads((IMAGE / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/cline"]["version"] == "3.0.65"
    # The Bun binary comes as the platform's optional dependency, pinned to the same version.
    assert lock["packages"]["node_modules/@cline/cli-linux-x64"]["version"] == "3.0.65"
    assert all("integrity" in p for name, p in lock["packages"].items() if name)
    dockerfile = (IMAGE / "Dockerfile").read_text()
    assert "npm ci" in dockerfile and "--omit=optional" not in dockerfile and "--ignore-scripts" not in dockerfile
    assert "npm_config_cafile=/usr/local/share/harness-probe/build-ca-bundle.pem" in dockerfile
    assert "ENV CLINE_NO_AUTO_UPDATE=1" in dockerfile
    # `cline` is the package's Node wrapper, as a global install links it (npm's .bin/cline is the bare binary).
    assert "ln -s /opt/cline/node_modules/cline/bin/cline /usr/local/bin/cline" in dockerfile
    assert dockerfile.rstrip().splitlines()[-2:] == ["USER probe", "WORKDIR /home/probe"]
