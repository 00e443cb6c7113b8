"""Pi coding agent (@mariozechner/pi-coding-agent) 0.73.1: launch preset, native log locations and normalizer."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

from orchestrator.harnesses.base import Harness, Launch, LaunchContext
from orchestrator.harnesses.options import Choice, Integer
from orchestrator.harnesses.pi.rollout import build_rollout
from orchestrator.harnesses.pi.session import read_native
from orchestrator.records import Rollout
from orchestrator.scenarios import Scenario

__all__ = ["PI_APIS", "PROBE_DIR", "PiHarness", "pi_models", "pi_settings"]

AGENT_DIR = "/home/probe/.pi/agent"  # Pi's own config dir: models.json, settings.json, whatever Pi adds
PROBE_DIR = "/home/probe/.pi-probe"  # ours: the session tree (--session-dir) and the stdout event stream
PROVIDER = "probe"
# Our protocol names -> Pi's `api` names for a custom provider (docs/models.md, "Supported APIs").
PI_APIS = {"chat": "openai-completions", "responses": "openai-responses", "messages": "anthropic-messages"}
# retry.provider.timeoutMs: how long the provider SDK waits for a reply's headers. The SDKs clear this timer
# once headers arrive and Pi disables undici's body timeout, so it bounds a silent server, not a silent stream.
REQUEST_TIMEOUT_MS = 30_000
_VERSION = re.compile(r"\d+\.\d+\.\d+\S*")


def pi_models(scenario: Scenario, ctx: LaunchContext, protocol: str) -> dict[str, Any]:
    """~/.pi/agent/models.json: one custom provider speaking the chosen protocol to the scripted provider."""
    # The Anthropic SDK appends /v1/messages to its base URL itself; the OpenAI SDK appends only the route.
    base = ctx.base_url.rstrip("/").removesuffix("/v1") if protocol == "messages" else ctx.base_url
    return {
        "providers": {
            PROVIDER: {
                "baseUrl": base,
                "api": PI_APIS[protocol],
                "apiKey": ctx.api_key,
                # A plain system message and no reasoning_effort: what any Chat Completions server accepts.
                "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
                "models": [{"id": scenario.model, "contextWindow": 128000, "maxTokens": 16384}],
            }
        }
    }


def pi_settings(provider_retries: int | None) -> dict[str, Any]:
    """~/.pi/agent/settings.json: no compaction (it would add model calls); provider SDK deadline and retries."""
    provider: dict[str, Any] = {"timeoutMs": REQUEST_TIMEOUT_MS}
    if provider_retries is not None:
        provider["maxRetries"] = provider_retries
    return {
        "compaction": {"enabled": False},
        "enableInstallTelemetry": False,
        "quietStartup": True,
        # Pi's own retry layer as shipped (3 retries, 2 s doubling): the layer that records failed attempts.
        "retry": {"enabled": True, "maxRetries": 3, "baseDelayMs": 2000, "provider": provider},
    }


class PiHarness(Harness):
    name = "pi"
    image = "pi"
    description = (
        "Pi coding agent 0.73.1 (npm @mariozechner/pi-coding-agent): `pi -p --mode json`, custom provider "
        "(Chat Completions, Responses or Anthropic Messages), session JSONL"
    )
    protocols = tuple(PI_APIS)
    native_paths = (PROBE_DIR, AGENT_DIR)
    version_command = ("pi", "--version")
    options_declared = (
        Choice("protocol", tuple(PI_APIS), "chat", "the provider API Pi's custom provider speaks"),
        Integer(
            "provider_retries",
            None,
            "retry.provider.maxRetries, the provider SDK's own hidden retries "
            "(unset: the SDK's, 2; 0 leaves every retry to Pi's recorded retry layer)",
            minimum=0,
        ),
    )

    def __init__(self, options: dict[str, str] | None = None) -> None:
        super().__init__(options)
        self.protocol = self.settings.text("protocol")
        self.provider_retries = self.settings.optional_integer("provider_retries")

    def launch(self, scenario: Scenario, ctx: LaunchContext) -> Launch:
        pi = [
            "pi",
            "-p",
            "--mode",
            "json",
            "--provider",
            PROVIDER,
            "--model",
            scenario.model,
            "--session-dir",
            f"{PROBE_DIR}/sessions",
            # Nothing from the image or work dir may change the agent: no extensions, skills, AGENTS.md.
            "--no-extensions",
            "--no-skills",
            "--no-prompt-templates",
            "--no-context-files",
            "--offline",
            scenario.task,
        ]
        # The JSON event stream goes to a file we collect untouched; stderr stays in harness.log.
        script = f"mkdir -p {PROBE_DIR} && exec {shlex.join(pi)} > {PROBE_DIR}/events.jsonl"
        files = {
            f"{AGENT_DIR}/models.json": _json(pi_models(scenario, ctx, self.protocol)),
            f"{AGENT_DIR}/settings.json": _json(pi_settings(self.provider_retries)),
        }
        env = {"PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1"}
        return Launch(command=["sh", "-c", script], environment=env, files=files)

    def normalize(self, native_dir: Path) -> Rollout:
        return build_rollout(read_native(native_dir))

    def parse_version(self, output: str) -> str:
        found = _VERSION.findall(output)
        return f"pi {found[-1]}" if found else super().parse_version(output)


def _json(data: dict[str, Any]) -> bytes:
    return (json.dumps(data, indent=2) + "\n").encode()
