"""Gemini CLI (npm @google/gemini-cli) 0.61.0: launch preset, its settings, where its records are, the normalizer."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from orchestrator.harnesses.base import Harness, Launch, LaunchContext
from orchestrator.harnesses.gemini_cli.rollout import build_rollout
from orchestrator.harnesses.options import Flag
from orchestrator.records import Rollout
from orchestrator.scenarios import Scenario

__all__ = ["GEMINI_DIR", "PROBE_DIR", "TELEMETRY_FILE", "GeminiCliHarness", "gemini_settings"]

GEMINI_DIR = "/home/probe/.gemini"  # settings.json (ours), tmp/<project>/chats/session-*.jsonl, installation_id
PROBE_DIR = "/home/probe/.gemini-probe"  # ours: the OpenTelemetry file, and TMPDIR (its error reports land there)
TELEMETRY_FILE = f"{PROBE_DIR}/telemetry.log"
_VERSION = re.compile(r"\d+\.\d+\.\d+\S*")


def gemini_settings(telemetry: bool) -> dict[str, Any]:
    """~/.gemini/settings.json: the auth type pinned, no usage statistics, no update checks, OTel to a file."""
    settings: dict[str, Any] = {
        # With GOOGLE_GEMINI_BASE_URL set, auto-detection picks the `gateway` type; the API-key type is the one a
        # user of the Gemini API has, and it sends the base URL and key as given.
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        # Usage statistics go to Google (Clearcut, play.googleapis.com) and add a user-id header to every request.
        "privacy": {"usageStatisticsEnabled": False},
        # The update check asks the npm registry for the newest release.
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    }
    if telemetry:
        # Its second self-report: OpenTelemetry logs, spans and metrics written to a file (target `local`), prompts
        # and replies included (the GenAI events carry the response ids, tool call ids and texts only then).
        settings["telemetry"] = {"enabled": True, "target": "local", "outfile": TELEMETRY_FILE, "logPrompts": True}
    return settings


class GeminiCliHarness(Harness):
    name = "gemini-cli"
    image = "gemini-cli"
    description = (
        "Gemini CLI 0.61.0 (npm @google/gemini-cli): `gemini --yolo --prompt`, Gemini generateContent at "
        "GOOGLE_GEMINI_BASE_URL, chat recording (JSONL) and OpenTelemetry to a file"
    )
    protocols = ("gemini",)
    native_paths = (GEMINI_DIR, PROBE_DIR)
    version_command = ("gemini", "--version")
    options_declared = (
        Flag(
            "telemetry", True, "write OpenTelemetry to a file, its second self-report (false: the chat recording only)"
        ),
    )

    def launch(self, scenario: Scenario, ctx: LaunchContext) -> Launch:
        command = ["gemini", "--yolo", f"--model={scenario.model}", f"--prompt={scenario.task}"]
        env = {
            # google-genai appends the API version and the model's method to the base URL itself.
            "GOOGLE_GEMINI_BASE_URL": ctx.base_url.rstrip("/").removesuffix("/v1"),
            "GEMINI_API_KEY": ctx.api_key,
            # Headless runs stop in an untrusted folder unless told otherwise (its own message names this variable).
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
            # Its error reports (gemini-client-error-*.json, with the failed request's context) go to os.tmpdir().
            "TMPDIR": f"{PROBE_DIR}/tmp",
            "NO_COLOR": "1",
            # One process: by default it starts a second Node (to raise the heap limit), which loads its 16 MB bundle
            # again (on a loaded machine its first request came 85-184 s after the pod started) and leaves a parent
            # that ignores SIGTERM, so the deadline's stop never reached the CLI's own handler (which flushes its
            # telemetry).
            "GEMINI_CLI_NO_RELAUNCH": "true",
        }
        settings = json.dumps(gemini_settings(self.settings.flag("telemetry")), indent=2) + "\n"
        script = f'mkdir -p {PROBE_DIR}/tmp && exec "$@"'
        return Launch(
            command=["sh", "-c", script, "sh", *command],
            environment=env,
            files={f"{GEMINI_DIR}/settings.json": settings.encode()},
        )

    def normalize(self, native_dir: Path) -> Rollout:
        return build_rollout(native_dir)

    def parse_version(self, output: str) -> str:
        found = _VERSION.findall(output)
        return f"gemini-cli {found[-1]}" if found else super().parse_version(output)
