"""Hermes Agent (NousResearch) 0.19.0: launch preset, native log locations and the state.db normalizer."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from orchestrator.harnesses.base import Harness, Launch, LaunchContext
from orchestrator.harnesses.hermes.native import DB_FILES, read_native
from orchestrator.harnesses.hermes.rollout import build_rollout
from orchestrator.records import Rollout
from orchestrator.scenarios import Scenario

__all__ = ["HERMES_BIN", "HERMES_HOME", "HermesHarness", "hermes_config"]

HERMES_HOME = "/home/probe/.hermes"
# The venv's own entry point: a login shell (which Hermes's terminal tool uses) resets PATH.
HERMES_BIN = "/opt/hermes/bin/hermes"
# Per HTTP read, in seconds. Hermes takes the unqualified host `provider` for a local server and then waits up
# to 1800 s (read) / 900 s (stale stream) for a reply; these documented variables bring both down, so a
# withheld reply is abandoned and retried well within an episode.
REQUEST_TIMEOUT_S = 20
# Big enough never to trigger compression, and given explicitly so Hermes does not probe the endpoint for it.
CONTEXT_LENGTH = 131072
_VERSION = re.compile(r"Hermes Agent v?(\S+)(?: \(([^)]*)\))?")


def hermes_config(scenario: Scenario, ctx: LaunchContext) -> dict[str, Any]:
    """~/.hermes/config.yaml for one episode: the scripted provider, and every side feature that calls a model off."""
    return {
        "model": {
            "provider": "custom",
            "base_url": ctx.base_url,
            "api_key": ctx.api_key,
            "default": scenario.model,
            "context_length": CONTEXT_LENGTH,
            # Declared, so image routing does not probe the endpoint as an Ollama server.
            "supports_vision": False,
        },
        "terminal": {"backend": "local", "cwd": ctx.workdir},
        # Side tasks that would each cost an extra model request (auxiliary on the wire): all off.
        "compression": {"enabled": False},
        "memory": {"memory_enabled": False, "user_profile_enabled": False},
        "auxiliary": {"title_generation": {"enabled": False}},
        "curator": {"enabled": False},
        "checkpoints": {"enabled": False},
    }


class HermesHarness(Harness):
    name = "hermes"
    image = "hermes"
    description = "Hermes Agent 0.19.0 (PyPI hermes-agent): one-shot `hermes -z`, custom Chat Completions provider"
    protocols = ("chat",)
    native_paths = (
        *(f"{HERMES_HOME}/{name}" for name in DB_FILES),
        f"{HERMES_HOME}/logs",
        f"{HERMES_HOME}/sessions",  # request_dump_*.json: the attempt Hermes gave up on
    )
    version_command = (HERMES_BIN, "--version")

    def launch(self, scenario: Scenario, ctx: LaunchContext) -> Launch:
        # -z: one prompt, final text on stdout, approvals bypassed; --yolo too, so a dangerous-command
        # prompt can never block; -t terminal: the shell tool (and its process companion) only.
        cmd = [HERMES_BIN, "-z", scenario.task, "--yolo", "-t", "terminal"]
        timeout = str(REQUEST_TIMEOUT_S)
        env = {
            "HERMES_HOME": HERMES_HOME,
            "HERMES_STREAM_READ_TIMEOUT": timeout,
            "HERMES_STREAM_STALE_TIMEOUT": timeout,
            "HERMES_API_CALL_STALE_TIMEOUT": timeout,
            # Request dumps carry naive local times: pinning the zone makes them UTC by construction.
            "TZ": "UTC",
        }
        config = yaml.safe_dump(hermes_config(scenario, ctx), sort_keys=False).encode()
        return Launch(command=cmd, environment=env, files={f"{HERMES_HOME}/config.yaml": config})

    def normalize(self, native_dir: Path) -> Rollout:
        return build_rollout(read_native(native_dir))

    def parse_version(self, output: str) -> str:
        # `hermes --version` prints several lines (install dir, Python, SDK); the first names Hermes itself.
        for line in output.splitlines():
            found = _VERSION.search(line)
            if found:
                return found.group(0).strip()
        return super().parse_version(output)
