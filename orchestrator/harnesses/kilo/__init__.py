"""Kilo Code CLI (npm @kilocode/cli) 7.7.7, an OpenCode fork: launch preset, native paths, and OpenCode's reader."""

from __future__ import annotations

import json
import re
from pathlib import Path, PurePosixPath

from orchestrator.harnesses.base import Harness, Launch, LaunchContext
from orchestrator.harnesses.opencode_family.launch import PACKAGES, PROVIDER, config, script
from orchestrator.harnesses.opencode_family.rollout import build_rollout
from orchestrator.harnesses.opencode_family.store import Layout, read_native
from orchestrator.harnesses.options import Choice
from orchestrator.records import Rollout, gap
from orchestrator.scenarios import Scenario

__all__ = ["CONFIG", "DATA_DIR", "PROBE_DIR", "KiloHarness"]

HOME = "/home/probe"
# Kilo's folders follow the XDG variables; the launch sets each below the container's HOME, so a run finds none of
# an earlier one's and every file it writes is where it is collected.
XDG = {
    "XDG_CONFIG_HOME": f"{HOME}/.config",
    "XDG_DATA_HOME": f"{HOME}/.local/share",
    "XDG_STATE_HOME": f"{HOME}/.local/state",
    "XDG_CACHE_HOME": f"{HOME}/.cache",
}
CONFIG = f"{XDG['XDG_CONFIG_HOME']}/kilo/kilo.json"
DATA_DIR = f"{XDG['XDG_DATA_HOME']}/kilo"  # kilo.db (+ -wal, -shm) and log/
PROBE_DIR = f"{HOME}/.kilo-probe"  # ours: the `--format json` event stream (stdout) and the log (stderr)
LAYOUT = Layout("kilo", "Kilo", PurePosixPath(DATA_DIR).name, PurePosixPath(PROBE_DIR).name, "kilo.db")
_VERSION = re.compile(r"\d+\.\d+\.\d+\S*")


class KiloHarness(Harness):
    name = "kilo"
    image = "kilo"
    description = (
        "Kilo Code CLI 7.7.7 (npm @kilocode/cli, Bun binary, an OpenCode fork): `kilo run --auto --format json`, "
        "custom provider (Chat Completions, Responses or Anthropic Messages), SQLite session store"
    )
    protocols = tuple(PACKAGES)
    native_paths = (DATA_DIR, PROBE_DIR)
    version_command = ("kilo", "--version")
    options_declared = (
        Choice("protocol", tuple(PACKAGES), "chat", "the provider API, by the bundled AI SDK package Kilo loads"),
    )

    def __init__(self, options: dict[str, str] | None = None) -> None:
        super().__init__(options)
        self.protocol = self.settings.text("protocol")

    def launch(self, scenario: Scenario, ctx: LaunchContext) -> Launch:
        # --auto: every permission not denied is granted (a headless run must never stop to ask); --pure: no
        # external plugins.
        run = ["kilo", "run", "--auto", "--pure", "--format", "json", "--print-logs"]
        run += ["--model", f"{PROVIDER}/{scenario.model}", "--", scenario.task]
        env = {
            **XDG,
            # One process: no background daemon that would outlive the run or serve another.
            "KILO_NO_DAEMON": "1",
            # The store is kilo.db whatever release channel the build names (else kilo-<channel>.db). Its on-disk
            # store is what is collected: KILO_DB=:memory: would leave none.
            "KILO_DISABLE_CHANNEL_DB": "1",
            # No PostHog telemetry (anything but `all` turns it off), catalogue fetch (models.dev), update check,
            # bundled plugins, LSP downloads, .claude reading, sharing, session upload or presence: each would be
            # traffic the scripted provider does not answer, or behaviour it did not script.
            "KILO_TELEMETRY_LEVEL": "off",
            "KILO_DISABLE_MODELS_FETCH": "1",
            "KILO_DISABLE_AUTOUPDATE": "1",
            "KILO_DISABLE_DEFAULT_PLUGINS": "1",
            "KILO_DISABLE_LSP_DOWNLOAD": "1",
            "KILO_DISABLE_CLAUDE_CODE": "1",
            "KILO_DISABLE_SHARE": "1",
            "KILO_DISABLE_SESSION_INGEST": "1",
            "KILO_DISABLE_PRESENCE": "1",
            # Kilo talks to an in-process HTTP server: never through a proxy.
            "NO_PROXY": "localhost,127.0.0.1",
        }
        file = json.dumps(config(scenario, ctx, "https://app.kilo.ai/config.json", self.protocol), indent=2) + "\n"
        return Launch(command=script(run, PROBE_DIR), environment=env, files={CONFIG: file.encode()})

    def normalize(self, native_dir: Path) -> Rollout:
        rollout = build_rollout(read_native(native_dir, LAYOUT), LAYOUT, self.protocol)
        rollout["gaps"].append(
            gap(
                "model_calls.protocol_configured",
                f"Kilo records the provider's id (probe), never its package or API: protocol is the one the run "
                f"configured ({PACKAGES[self.protocol]}, -a protocol={self.protocol})",
            )
        )
        return rollout

    def parse_version(self, output: str) -> str:
        found = _VERSION.findall(output)
        return f"kilo {found[-1]}" if found else super().parse_version(output)
