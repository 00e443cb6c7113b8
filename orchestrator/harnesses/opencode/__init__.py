"""OpenCode (npm opencode-ai) 1.18.33: launch preset, native log locations and the SQLite normalizer."""

from __future__ import annotations

import json
import re
from pathlib import Path, PurePosixPath

from orchestrator.harnesses.base import Harness, Launch, LaunchContext
from orchestrator.harnesses.opencode_family.launch import CHUNK_TIMEOUT_MS, PROVIDER, config, script
from orchestrator.harnesses.opencode_family.rollout import build_rollout
from orchestrator.harnesses.opencode_family.store import Layout, read_native
from orchestrator.records import Rollout
from orchestrator.scenarios import Scenario

__all__ = ["CHUNK_TIMEOUT_MS", "DATA_DIR", "PROBE_DIR", "OpenCodeHarness"]

CONFIG = "/home/probe/.config/opencode/opencode.json"
DATA_DIR = "/home/probe/.local/share/opencode"  # opencode.db (+ -wal, -shm) and log/
PROBE_DIR = "/home/probe/.opencode-probe"  # ours: the `--format json` event stream (stdout) and the log (stderr)
LAYOUT = Layout("opencode", "OpenCode", PurePosixPath(DATA_DIR).name, PurePosixPath(PROBE_DIR).name, "opencode.db")
_VERSION = re.compile(r"\d+\.\d+\.\d+\S*")


class OpenCodeHarness(Harness):
    name = "opencode"
    image = "opencode"
    description = (
        "OpenCode 1.18.33 (npm opencode-ai, Bun binary): `opencode run --format json`, custom provider "
        "(@ai-sdk/openai-compatible, Chat Completions), SQLite session store"
    )
    protocols = ("chat",)
    native_paths = (DATA_DIR, PROBE_DIR)
    version_command = ("opencode", "--version")

    def launch(self, scenario: Scenario, ctx: LaunchContext) -> Launch:
        run = [
            "opencode",
            "run",
            "--format",
            "json",
            "--pure",
            "--print-logs",
            "--model",
            f"{PROVIDER}/{scenario.model}",
        ]
        run += ["--", scenario.task]
        env = {
            # No catalogue fetch (models.dev), update check, bundled plugins, LSP downloads or .claude reading:
            # each would be traffic the scripted provider does not answer, or behaviour it did not script.
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
            "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
            "OPENCODE_DISABLE_CLAUDE_CODE": "1",
            "OPENCODE_DISABLE_SHARE": "1",
            # OpenCode talks to an in-process HTTP server: never through a proxy.
            "NO_PROXY": "localhost,127.0.0.1",
        }
        file = (json.dumps(config(scenario, ctx, "https://opencode.ai/config.json"), indent=2) + "\n").encode()
        return Launch(command=script(run, PROBE_DIR), environment=env, files={CONFIG: file})

    def normalize(self, native_dir: Path) -> Rollout:
        return build_rollout(read_native(native_dir, LAYOUT), LAYOUT)

    def parse_version(self, output: str) -> str:
        found = _VERSION.findall(output)
        return f"opencode {found[-1]}" if found else super().parse_version(output)
