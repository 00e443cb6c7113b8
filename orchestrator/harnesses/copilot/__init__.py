"""GitHub Copilot CLI (npm @github/copilot) 1.0.102: launch preset on its BYOK provider path, native log locations."""

from __future__ import annotations

import re
from pathlib import Path

from orchestrator.harnesses.base import Harness, Launch, LaunchContext
from orchestrator.harnesses.copilot.native import PROBE_NAME, SESSIONS, STREAM_NAME, USAGE_NAME, read_native
from orchestrator.harnesses.copilot.rollout import build_rollout
from orchestrator.harnesses.options import Choice, Flag
from orchestrator.records import Rollout
from orchestrator.scenarios import Scenario

__all__ = ["COPILOT_HOME", "PROBE_DIR", "PROVIDERS", "CopilotHarness", "provider_environment"]

# COPILOT_HOME: its config, its process logs (logs/), each session's own event log (session-state/<id>/
# events.jsonl, with its workspace, checkpoints and file snapshots) and session-store.db, a search index derived
# from them. The logs and the session state are collected; the index repeats the usage records and is not.
COPILOT_HOME = "/home/probe/.copilot"
# Ours: the `--output-format json` stdout stream and the `--usage-output-file` file, collected untouched.
PROBE_DIR = f"/home/probe/{PROBE_NAME}"
# Our protocol names -> (COPILOT_PROVIDER_TYPE, COPILOT_PROVIDER_WIRE_API) of its BYOK provider (`copilot help
# providers`): the wire API chooses between the OpenAI routes; the anthropic type speaks Messages only.
PROVIDERS = {"chat": ("openai", "completions"), "responses": ("openai", "responses"), "messages": ("anthropic", None)}
_VERSION = re.compile(r"\d+\.\d+\.\d+\S*?(?=\.?(?:\s|$))")


def provider_environment(scenario: Scenario, ctx: LaunchContext, protocol: str) -> dict[str, str]:
    """The BYOK variables: setting COPILOT_PROVIDER_BASE_URL is what turns GitHub's model routing (and login) off."""
    kind, wire = PROVIDERS[protocol]
    # The OpenAI SDK appends only the route to its base URL; the Anthropic SDK appends /v1/messages itself.
    base = ctx.base_url.rstrip("/").removesuffix("/v1") if kind == "anthropic" else ctx.base_url
    env = {
        "COPILOT_PROVIDER_BASE_URL": base,
        "COPILOT_PROVIDER_TYPE": kind,
        "COPILOT_PROVIDER_API_KEY": ctx.api_key,
        "COPILOT_MODEL": scenario.model,
    }
    if wire is not None:
        env["COPILOT_PROVIDER_WIRE_API"] = wire
    return env


class CopilotHarness(Harness):
    name = "copilot"
    image = "copilot"
    description = (
        "GitHub Copilot CLI 1.0.102 (npm @github/copilot, native binary; image built locally only): `copilot -p "
        "--yolo --output-format json`, BYOK provider (Chat Completions, Responses or Anthropic Messages)"
    )
    protocols = tuple(PROVIDERS)
    native_paths = (f"{COPILOT_HOME}/{SESSIONS}", f"{COPILOT_HOME}/logs", PROBE_DIR)
    version_command = ("copilot", "--version")
    options_declared = (
        Choice("protocol", tuple(PROVIDERS), "chat", "the provider API Copilot's BYOK provider speaks"),
        Flag(
            "opt_outs",
            True,
            "Copilot's own opt-outs: COPILOT_OFFLINE=true (no GitHub login, telemetry, web tools, GitHub MCP server "
            "or update), --disable-client-telemetry, --no-auto-update (false: none, it runs as shipped and whatever "
            "it sends elsewhere is witnessed as egress)",
        ),
    )

    def __init__(self, options: dict[str, str] | None = None) -> None:
        super().__init__(options)
        self.protocol = self.settings.text("protocol")
        self.opt_outs = self.settings.flag("opt_outs")

    def launch(self, scenario: Scenario, ctx: LaunchContext) -> Launch:
        copilot = [
            "copilot",
            "-p",
            scenario.task,
            # --yolo: every tool, path and URL allowed without asking (a prompt-mode run must never stop to ask).
            "--yolo",
            "--output-format",
            "json",
            # Its stdout stream carries no usage; this file gets the session's final usage figures.
            "--usage-output-file",
            f"{PROBE_DIR}/{USAGE_NAME}",
            # Nothing in the image or the work dir may change the agent, and nothing may wait on a person.
            "--no-custom-instructions",
            "--no-ask-user",
        ]
        env = {**provider_environment(scenario, ctx, self.protocol), "COPILOT_HOME": COPILOT_HOME, "NO_COLOR": "1"}
        if self.opt_outs:
            # No client telemetry, no update download, no newer cached version preferred to the pinned binary.
            copilot += ["--disable-client-telemetry", "--no-auto-update"]
            env["COPILOT_OFFLINE"] = "true"
        else:
            env["COPILOT_AUTO_UPDATE"] = "true"  # the image turns updates off for its own version probe
        # stdout (the JSON event stream) goes to a file we collect; stderr stays in harness.log; stdin is closed.
        stream = f"{PROBE_DIR}/{STREAM_NAME}"
        command = ["sh", "-c", f'mkdir -p {PROBE_DIR} && exec "$@" </dev/null >{stream}', "copilot", *copilot]
        return Launch(command=command, environment=env)

    def normalize(self, native_dir: Path) -> Rollout:
        return build_rollout(read_native(native_dir))

    def parse_version(self, output: str) -> str:
        # `copilot --version` prints "GitHub Copilot CLI 1.0.102." and then a line about `copilot update`.
        found = _VERSION.findall(output)
        return f"copilot {found[0]}" if found else super().parse_version(output)
