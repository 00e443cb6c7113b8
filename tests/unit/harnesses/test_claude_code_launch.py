"""The Claude Code launch preset: command line, environment, timeouts, native paths, version parsing, pinned image."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from orchestrator.harnesses import LaunchContext, get_harness
from orchestrator.harnesses.claude_code import (
    CONFIG_DIR,
    MAX_RETRIES,
    PROBE_DIR,
    REQUEST_TIMEOUT_MS,
    STREAM_NAME,
    ClaudeCodeHarness,
)
from orchestrator.images import parent_of
from orchestrator.scenarios import load_scenario

ROOT = Path(__file__).resolve().parents[3]
IMAGE = ROOT / "images" / "claude-code"
VERSION = "2.1.328"


def test_registered_under_its_name() -> None:
    h = get_harness("claude-code")
    assert isinstance(h, ClaudeCodeHarness)
    assert (h.name, h.image, h.protocols) == ("claude-code", "claude-code", ("messages",))
    with pytest.raises(ValueError, match="has no option"):
        get_harness("claude-code", {"mode": "x"})


def _claude_argv(command: list[str]) -> list[str]:
    # sh -c SCRIPT NAME ARGS...: the arguments after the script's $0 are claude's own argv.
    assert command[:2] == ["sh", "-c"]
    assert command[3] == "claude"
    return command[4:]


def test_headless_stream_json_run_with_the_scenario_model() -> None:
    scenario = load_scenario("tool_success")
    launch = get_harness("claude-code").launch(scenario, LaunchContext())
    assert _claude_argv(launch.command) == [
        "claude",
        "-p",
        scenario.task,
        "--model",
        scenario.model,
        "--dangerously-skip-permissions",
        "--output-format",
        "stream-json",
        "--verbose",
    ]
    # The expectations never reach the harness: only the task does.
    assert "PROBE_DONE" not in " ".join(launch.command)
    assert launch.files == {}


def test_stdout_goes_to_a_native_file_and_stderr_stays_in_the_log(tmp_path: Path) -> None:
    # The real shell script, run with a stand-in `claude` and the probe folder moved under tmp_path.
    launch = get_harness("claude-code").launch(load_scenario("tool_success"), LaunchContext())
    script = launch.command[2].replace(PROBE_DIR, str(tmp_path / "probe"))
    fake = tmp_path / "bin" / "claude"
    fake.parent.mkdir()
    fake.write_text(
        '#!/bin/sh\necho "{\\"argc\\": $#}"\necho to-stderr >&2\nif read line; then echo "stdin: $line"; fi\n'
    )
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{fake.parent}:{os.environ['PATH']}"}
    proc = subprocess.run(["sh", "-c", script, *launch.command[3:]], capture_output=True, text=True, env=env)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "to-stderr\n")
    # All eight arguments arrive intact (the task has spaces), and stdin is closed.
    assert (tmp_path / "probe" / STREAM_NAME).read_text() == '{"argc": 8}\n'


def test_environment_points_at_the_scripted_provider_and_turns_side_traffic_off() -> None:
    ctx = LaunchContext()
    scenario = load_scenario("tool_success")
    env = get_harness("claude-code").launch(scenario, ctx).environment
    # The Anthropic SDK appends /v1/messages to the base URL itself.
    assert env["ANTHROPIC_BASE_URL"] == "http://provider:8080"
    assert env["ANTHROPIC_API_KEY"] == ctx.api_key
    for var in ("DISABLE_TELEMETRY", "DISABLE_AUTOUPDATER", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"):
        assert env[var] == "1"
    assert env["CLAUDE_CONFIG_DIR"] == CONFIG_DIR and CONFIG_DIR.startswith(ctx.home + "/")
    models = {k: v for k, v in env.items() if k.endswith("_MODEL")}
    assert models and set(models.values()) == {scenario.model}
    # Inherited Claude Code session variables would stop transcripts being written.
    assert not [k for k in env if k.startswith("CLAUDECODE") or k == "CLAUDE_CODE_SESSION_ID"]


def test_timeouts_and_retries_end_a_withheld_reply_well_inside_the_episode() -> None:
    env = get_harness("claude-code").launch(load_scenario("harness_deadline"), LaunchContext()).environment
    assert env["API_TIMEOUT_MS"] == env["CLAUDE_BYTE_STREAM_IDLE_TIMEOUT_MS"] == str(REQUEST_TIMEOUT_MS)
    assert env["CLAUDE_ENABLE_BYTE_WATCHDOG"] == "1"
    # Claude Code clamps the byte watchdog to at least 10 s; the episode default is 300 s.
    assert 10_000 <= REQUEST_TIMEOUT_MS <= 60_000
    assert env["CLAUDE_CODE_MAX_RETRIES"] == str(MAX_RETRIES) and 2 <= MAX_RETRIES <= 6


def test_native_paths_are_the_config_dir_and_our_stdout_folder() -> None:
    h = get_harness("claude-code")
    assert h.native_paths == (CONFIG_DIR, PROBE_DIR)
    assert all(p.startswith(LaunchContext().home + "/") for p in h.native_paths)


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("2.1.328 (Claude Code)\n", "2.1.328 (Claude Code)"),
        ("some warning\n2.1.328 (Claude Code)", "2.1.328 (Claude Code)"),
        ("2.1.328", "2.1.328"),
        ("", ""),
    ],
)
def test_version_string(output: str, expected: str) -> None:
    assert get_harness("claude-code").parse_version(output) == expected


def test_image_pins_the_exact_version_with_a_lock_and_keeps_optional_dependencies() -> None:
    assert parent_of("claude-code") == "node"
    package = json.loads((IMAGE / "package.json").read_text())
    assert package["dependencies"] == {"@anthropic-ai/claude-code": VERSION}
    lock = json.loads((IMAGE / "package-lock.json").read_text())
    entry = lock["packages"]["node_modules/@anthropic-ai/claude-code"]
    assert entry["version"] == VERSION and entry["integrity"].startswith("sha512-")
    # The native binary arrives through a per-platform optional dependency, locked like the rest.
    native = lock["packages"]["node_modules/@anthropic-ai/claude-code-linux-x64"]
    assert native["version"] == VERSION and native["optional"] is True and native["integrity"]
    dockerfile = (IMAGE / "Dockerfile").read_text()
    assert "npm ci" in dockerfile and "npm install" not in dockerfile
    assert not re.search(r"--omit[= ]optional|--no-optional|--ignore-scripts", dockerfile)
    assert re.search(r"^USER probe$", dockerfile, re.MULTILINE)


def test_the_build_ca_is_trusted_by_the_install_step_only() -> None:
    dockerfile = (IMAGE / "Dockerfile").read_text()
    lines = [ln for ln in dockerfile.splitlines() if "build-ca-bundle.pem" in ln]
    assert lines and all(re.match(r"\s*(&& )?(npm_config_cafile|NODE_EXTRA_CA_CERTS)=", ln) for ln in lines)
    assert not re.search(r"^ENV .*(CA|CERT)", dockerfile, re.MULTILINE)


def test_version_is_asked_from_the_binary_on_path() -> None:
    assert get_harness("claude-code").version_command == ("claude", "--version")
