"""OpenCode (npm opencode-ai) 1.18.33: launch preset, native log locations and the SQLite normalizer."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

from orchestrator.harnesses.base import Harness, Launch, LaunchContext
from orchestrator.harnesses.opencode.rollout import build_rollout
from orchestrator.harnesses.opencode.store import STDERR_LOG, read_native
from orchestrator.records import Rollout
from orchestrator.scenarios import Scenario

__all__ = ["CHUNK_TIMEOUT_MS", "DATA_DIR", "PROBE_DIR", "OpenCodeHarness", "opencode_config"]

CONFIG = "/home/probe/.config/opencode/opencode.json"
DATA_DIR = "/home/probe/.local/share/opencode"  # opencode.db (+ -wal, -shm) and log/
PROBE_DIR = "/home/probe/.opencode-probe"  # ours: the `--format json` event stream (stdout) and the log (stderr)
PROVIDER = "probe"
# provider.options.chunkTimeout: OpenCode aborts a stream that sends no SSE chunk for this long ("SSE read timed
# out", which its retry policy retries). Its default, 300 s, is the whole episode; 20 s leaves room to retry.
CHUNK_TIMEOUT_MS = 20_000
# provider.options.timeout: a deadline on the whole request (headers and body), for a server that never answers.
REQUEST_TIMEOUT_MS = 120_000
_VERSION = re.compile(r"\d+\.\d+\.\d+\S*")


def opencode_config(scenario: Scenario, ctx: LaunchContext) -> dict[str, Any]:
    """~/.config/opencode/opencode.json: the scripted provider (Chat Completions), no side agents, no prompts."""
    return {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "enabled_providers": [PROVIDER],
        "model": f"{PROVIDER}/{scenario.model}",
        "small_model": f"{PROVIDER}/{scenario.model}",
        "provider": {
            PROVIDER: {
                "npm": "@ai-sdk/openai-compatible",
                "name": PROVIDER,
                "options": {
                    "baseURL": ctx.base_url,
                    "apiKey": ctx.api_key,
                    "chunkTimeout": CHUNK_TIMEOUT_MS,
                    "timeout": REQUEST_TIMEOUT_MS,
                },
                "models": {scenario.model: {"name": scenario.model, "limit": {"context": 128000, "output": 16384}}},
            }
        },
        # A headless run must never stop to ask; the scripted commands write outside the work dir (/probe).
        "permission": {"bash": "allow", "edit": "allow", "external_directory": "allow"},
        # Title and summary generation would each add a model request of their own.
        "agent": {"title": {"disable": True}, "summary": {"disable": True}},
        "lsp": False,
        "formatter": False,
    }


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
        # The JSON event stream and the log go to files we collect untouched. The log is printed to stderr
        # because OpenCode's own log file loses its last lines when it exits; stderr is written as it goes.
        # It is copied to our stderr afterwards, so harness.log still shows it (unless the run is killed).
        out, err = f"{PROBE_DIR}/events.jsonl", f"{PROBE_DIR}/{STDERR_LOG}"
        script = f"mkdir -p {PROBE_DIR} && {shlex.join(run)} > {out} 2> {err}; code=$?; cat {err} >&2; exit $code"
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
        config = (json.dumps(opencode_config(scenario, ctx), indent=2) + "\n").encode()
        return Launch(command=["sh", "-c", script], environment=env, files={CONFIG: config})

    def normalize(self, native_dir: Path) -> Rollout:
        return build_rollout(read_native(native_dir))

    def parse_version(self, output: str) -> str:
        found = _VERSION.findall(output)
        return f"opencode {found[-1]}" if found else super().parse_version(output)
