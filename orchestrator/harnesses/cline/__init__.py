"""Cline CLI (npm cline) 3.0.65: launch preset (Cline's own `auth`, then a headless run), native records, normalizer."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

from orchestrator.harnesses.base import Harness, Launch, LaunchContext
from orchestrator.harnesses.cline.native import read_native
from orchestrator.harnesses.cline.rollout import build_rollout
from orchestrator.harnesses.options import Choice
from orchestrator.records import Rollout
from orchestrator.scenarios import Scenario

__all__ = ["CLINE_PROVIDERS", "DATA_DIR", "DEFAULT_DATA_DIR", "PROBE_DIR", "ClineHarness", "cline_global_settings"]

PROBE_DIR = "/home/probe/.cline-probe"  # ours: the `--json` event stream (stdout) and the auth step's output
DATA_DIR = f"{PROBE_DIR}/data"  # Cline's --data-dir: settings/, sessions/, db/, logs/ (isolated "sandbox" state)
# Cline reads its global settings (the telemetry opt-out) from the default data dir before it applies --data-dir,
# so the opt-out goes there too: with it only under --data-dir, each command still exported to otel.cline.bot.
DEFAULT_DATA_DIR = "/home/probe/.cline/data"
# Our protocol names -> the Cline provider speaking it. `auth` takes a base URL for the first two only; the
# Anthropic provider honours a `baseUrl` in its stored settings (providers.json) all the same.
CLINE_PROVIDERS = {"chat": "openai-compatible", "responses": "openai-native", "messages": "anthropic"}
_VERSION = re.compile(r"\d+\.\d+\.\d+\S*")
# Adds settings.baseUrl to the provider `auth` stored (providers.json), for the provider whose `auth` refuses one.
_SET_BASE_URL = (
    "const fs=require('fs'),[f,p,u]=process.argv.slice(1),d=JSON.parse(fs.readFileSync(f,'utf8'));"
    "d.providers[p].settings.baseUrl=u;fs.writeFileSync(f,JSON.stringify(d,null,2)+'\\n')"
)


def cline_global_settings() -> dict[str, Any]:
    """<data-dir>/settings/global-settings.json: Cline's own telemetry opt-out (its OpenTelemetry export to
    otel.cline.bot is on by default) and no auto-update; nothing else is changed from a fresh install."""
    return {"telemetryOptOut": True, "autoUpdateEnabled": False}


class ClineHarness(Harness):
    name = "cline"
    image = "cline"
    description = (
        "Cline CLI 3.0.65 (npm cline, Bun binary): `cline auth` then `cline --json --auto-approve true`, "
        "provider openai-compatible (Chat Completions), openai-native (Responses) or anthropic (Messages); "
        "NDJSON event stream and stored session history"
    )
    protocols = tuple(CLINE_PROVIDERS)
    native_paths = (PROBE_DIR,)
    version_command = ("cline", "--version")
    options_declared = (Choice("protocol", tuple(CLINE_PROVIDERS), "chat", "the provider API Cline speaks"),)

    def __init__(self, options: dict[str, str] | None = None) -> None:
        super().__init__(options)
        self.protocol = self.settings.text("protocol")

    def launch(self, scenario: Scenario, ctx: LaunchContext) -> Launch:
        provider = CLINE_PROVIDERS[self.protocol]
        auth = ["cline", "auth", provider, "--apikey", ctx.api_key, "--modelid", scenario.model]
        if self.protocol != "messages":
            auth += ["--baseurl", ctx.base_url]
        auth += ["--data-dir", DATA_DIR]
        run = ["cline", "--json", "--auto-approve", "true", "--data-dir", DATA_DIR, "--", scenario.task]
        steps = [f"mkdir -p {PROBE_DIR}", f"{shlex.join(auth)} > {PROBE_DIR}/auth.log 2>&1"]
        if self.protocol == "messages":
            providers = f"{DATA_DIR}/settings/providers.json"
            steps.append(shlex.join(["node", "-e", _SET_BASE_URL, providers, provider, ctx.base_url]))
        # The event stream goes to a file we collect untouched; stderr (AI SDK warnings) stays in harness.log.
        steps.append(f"exec {shlex.join(run)} > {PROBE_DIR}/events.jsonl")
        settings = _json(cline_global_settings())
        files = {f"{d}/settings/global-settings.json": settings for d in (DATA_DIR, DEFAULT_DATA_DIR)}
        return Launch(command=["sh", "-c", " && ".join(steps)], environment={"CLINE_NO_AUTO_UPDATE": "1"}, files=files)

    def normalize(self, native_dir: Path) -> Rollout:
        return build_rollout(read_native(native_dir))

    def parse_version(self, output: str) -> str:
        found = _VERSION.findall(output)
        return f"cline {found[-1]}" if found else super().parse_version(output)


def _json(data: dict[str, Any]) -> bytes:
    return (json.dumps(data, indent=2) + "\n").encode()
