"""OpenClaw (npm openclaw) 2026.9.6: launch preset (`openclaw agent --local --json`), native records, normalizer."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

from orchestrator.harnesses.base import Harness, Launch, LaunchContext
from orchestrator.harnesses.openclaw.rollout import build_rollout
from orchestrator.harnesses.openclaw.store import RESULT, STDERR, read_native
from orchestrator.harnesses.options import Choice
from orchestrator.records import Rollout
from orchestrator.scenarios import Scenario

__all__ = ["AGENT_DIR", "OPENCLAW_APIS", "PROBE_DIR", "OpenClawHarness", "openclaw_config"]

STATE_DIR = "/home/probe/.openclaw"  # OpenClaw's state directory (its default): openclaw.json, state/, agents/
AGENT_DIR = f"{STATE_DIR}/agents"  # agents/main/agent/openclaw-agent.sqlite (+ -wal): the transcript and trajectory
PROBE_DIR = "/home/probe/.openclaw-probe"  # ours: the `--json` result on stdout and the stderr log
PROVIDER = "probe"
AGENT = "main"
# Our protocol names -> OpenClaw's `models.providers.<p>.api` (gateway/config-tools/custom-providers.md).
# `google-generative-ai` (generateContent) is a fourth api it has; this probe does not speak that protocol yet.
OPENCLAW_APIS = {"chat": "openai-completions", "responses": "openai-responses", "messages": "anthropic-messages"}
CONTEXT_WINDOW = 128_000
# models.providers.<p>.timeoutSeconds: OpenClaw's deadline on one model request, its stream's idle watchdog included
# (120 s unless set). At its default a withheld reply outlasts the harness_deadline scenario's 120 s; 30 s, as for
# Pi, leaves it room to give up and retry.
REQUEST_TIMEOUT_SECONDS = 30  # what the custom model entry declares unless the scenario names the model's window
_VERSION = re.compile(r"\d{4}\.\d+\.\d+\S*")


def openclaw_config(scenario: Scenario, ctx: LaunchContext, protocol: str) -> dict[str, Any]:
    """~/.openclaw/openclaw.json: one custom provider for the chosen protocol, the probe model its default,
    no catalogue beside it, no plugins or bundled skills, and no update check or feature statistics."""
    # The Anthropic SDK appends /v1/messages to its base URL itself; the OpenAI SDK appends only the route.
    base = ctx.base_url.rstrip("/").removesuffix("/v1") if protocol == "messages" else ctx.base_url
    window = scenario.data.get("context_window") or CONTEXT_WINDOW
    model: dict[str, Any] = {"id": scenario.model, "name": scenario.model, "contextWindow": window, "maxTokens": 16384}
    if protocol == "chat":
        # Unless told, OpenClaw asks a custom Chat Completions host for no usage in a stream (no stream_options)
        # and then records every reply's tokens as 0; the probe's provider does stream usage, as OpenAI does.
        model["compat"] = {"supportsUsageInStreaming": True}
    return {
        "update": {"checkOnStart": False},
        "telemetry": {"enabled": False},
        "models": {
            "mode": "replace",
            "providers": {
                PROVIDER: {
                    "baseUrl": base,
                    "apiKey": ctx.api_key,
                    "api": OPENCLAW_APIS[protocol],
                    "timeoutSeconds": REQUEST_TIMEOUT_SECONDS,
                    # `provider` resolves to 127.0.0.1 in the pod, which OpenClaw's SSRF guard blocks ("resolves to
                    # private/internal/special-use IP address") unless the provider allows private networks.
                    "request": {"allowPrivateNetwork": True},
                    "models": [model],
                }
            },
        },
        "agents": {"defaults": {"model": {"primary": f"{PROVIDER}/{scenario.model}"}, "workspace": ctx.workdir}},
        # Nothing from the image or work dir may change the agent (as Pi runs with --no-extensions --no-skills): no
        # plugins, no bundled skills in the prompt. The core tools, exec among them, stay; a start costs a third less.
        "plugins": {"enabled": False},
        "skills": {"allowBundled": []},
    }


class OpenClawHarness(Harness):
    name = "openclaw"
    image = "openclaw"
    description = (
        "OpenClaw 2026.9.6 (npm openclaw, on Node 24): `openclaw agent --local --json`, custom provider "
        "(Chat Completions, Responses or Anthropic Messages), SQLite transcript and runtime trajectory"
    )
    protocols = tuple(OPENCLAW_APIS)
    native_paths = (AGENT_DIR, PROBE_DIR)
    version_command = ("openclaw", "--version")
    options_declared = (
        Choice("protocol", tuple(OPENCLAW_APIS), "chat", "the provider API OpenClaw's custom provider speaks"),
    )

    def __init__(self, options: dict[str, str] | None = None) -> None:
        super().__init__(options)
        self.protocol = self.settings.text("protocol")

    def harness_profile(self) -> dict[str, Any] | None:
        # For a custom Chat Completions or Messages provider OpenClaw replays tool-call ids through a sanitizer
        # keeping only [A-Za-z0-9] (proxy_addons/call_ids.py); Responses ids it replays as they came.
        return None if self.protocol == "responses" else {"tool_call_ids": "alphanumeric"}

    def launch(self, scenario: Scenario, ctx: LaunchContext) -> Launch:
        agent = ["openclaw", "agent", "--local", "--json", "--agent", AGENT, "--message", scenario.task]
        # The JSON result goes to a file we collect untouched; stderr (diagnostics) too, and is echoed afterwards
        # so harness.log still shows it.
        out, err = f"{PROBE_DIR}/{RESULT}", f"{PROBE_DIR}/{STDERR}"
        script = f"mkdir -p {PROBE_DIR} && {shlex.join(agent)} > {out} 2> {err}; code=$?; cat {err} >&2; exit $code"
        env = {"OPENCLAW_NO_AUTO_UPDATE": "1", "DO_NOT_TRACK": "1", "NO_COLOR": "1"}
        config = (json.dumps(openclaw_config(scenario, ctx, self.protocol), indent=2) + "\n").encode()
        return Launch(command=["sh", "-c", script], environment=env, files={f"{STATE_DIR}/openclaw.json": config})

    def normalize(self, native_dir: Path) -> Rollout:
        return build_rollout(read_native(native_dir))

    def parse_version(self, output: str) -> str:
        found = _VERSION.findall(output)
        return f"openclaw {found[-1]}" if found else super().parse_version(output)
