"""Qwen Code (npm @qwen-code/qwen-code) 0.24.4: launch preset, native log locations and its normalizer."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

from orchestrator.harnesses.base import Harness, Launch, LaunchContext
from orchestrator.harnesses.options import Choice, Integer
from orchestrator.harnesses.qwen_code.calls import AUTH_TYPES
from orchestrator.harnesses.qwen_code.recording import PROBE_NAME, QWEN_DIR, STREAM_NAME, read_native
from orchestrator.harnesses.qwen_code.rollout import build_rollout
from orchestrator.records import Rollout
from orchestrator.scenarios import Scenario

__all__ = ["AUTH_TYPES", "PROBE_DIR", "QwenCodeHarness", "qwen_settings"]

HOME_QWEN = f"/home/probe/{QWEN_DIR}"  # Qwen's own folder: settings.json, projects/<cwd>/chats/*.jsonl
PROBE_DIR = f"/home/probe/{PROBE_NAME}"  # ours: the `--output-format stream-json` stream (stdout)
# model.generationConfig.timeout: how long the provider SDK waits for a reply's headers (Qwen's default 120 s).
REQUEST_TIMEOUT_MS = 60_000
_VERSION = re.compile(r"\d+\.\d+\.\d+\S*")


def qwen_settings(protocol: str, model: str, idle_timeout: int, sdk_retries: int | None) -> dict[str, Any]:
    """~/.qwen/settings.json: the auth type pinned, deadlines that fit an episode, and Qwen's own opt-outs of
    phoning home."""
    generation: dict[str, Any] = {"timeout": REQUEST_TIMEOUT_MS, "streamIdleTimeoutMs": idle_timeout * 1000}
    if sdk_retries is not None:
        generation["maxRetries"] = sdk_retries
    return {
        "security": {"auth": {"selectedType": AUTH_TYPES[protocol]}},
        "model": {"name": model, "generationConfig": generation},
        # No usage statistics to Alibaba's RUM endpoint (QwenLogger), no OpenTelemetry export, no update check.
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"enableAutoUpdate": False},
    }


def _endpoint(protocol: str, ctx: LaunchContext, model: str) -> dict[str, str]:
    if protocol == "messages":
        # The Anthropic SDK appends /v1/messages to its base URL itself.
        base = ctx.base_url.rstrip("/").removesuffix("/v1")
        return {"ANTHROPIC_BASE_URL": base, "ANTHROPIC_API_KEY": ctx.api_key, "ANTHROPIC_MODEL": model}
    return {"OPENAI_BASE_URL": ctx.base_url, "OPENAI_API_KEY": ctx.api_key, "OPENAI_MODEL": model}


class QwenCodeHarness(Harness):
    name = "qwen-code"
    image = "qwen-code"
    description = (
        "Qwen Code 0.24.4 (npm @qwen-code/qwen-code, a Gemini CLI fork): `qwen --yolo --chat-recording "
        "--prompt`, custom endpoint (Chat Completions, Responses or Anthropic Messages), chat-recording JSONL"
    )
    protocols = tuple(AUTH_TYPES)
    native_paths = (HOME_QWEN, PROBE_DIR)
    version_command = ("qwen", "--version")
    options_declared = (
        Choice("protocol", tuple(AUTH_TYPES), "chat", "the provider API Qwen Code speaks"),
        Integer(
            "stream_idle_timeout",
            20,
            "seconds Qwen waits for the next chunk of a streamed reply before it gives up and retries "
            "(model.generationConfig.streamIdleTimeoutMs; Qwen's own default, 240 s, outlasts an episode)",
            minimum=1,
        ),
        Integer(
            "sdk_retries",
            None,
            "model.generationConfig.maxRetries, the provider SDK's own hidden retries "
            "(unset: Qwen's default, 3; 0 leaves every retry to Qwen's recorded retry layer)",
            minimum=0,
        ),
    )

    def __init__(self, options: dict[str, str] | None = None) -> None:
        super().__init__(options)
        self.protocol = self.settings.text("protocol")
        self.idle_timeout = self.settings.integer("stream_idle_timeout")
        self.sdk_retries = self.settings.optional_integer("sdk_retries")

    def launch(self, scenario: Scenario, ctx: LaunchContext) -> Launch:
        qwen = [
            "qwen",
            "--yolo",
            "--auth-type",
            AUTH_TYPES[self.protocol],
            "--model",
            scenario.model,
            "--chat-recording",
            "--output-format",
            "stream-json",
            # The `=` form: a task that starts with a dash stays the prompt, not an option.
            f"--prompt={scenario.task}",
        ]
        # The stream-json events go to a file we collect untouched; stderr stays in harness.log.
        script = f"mkdir -p {PROBE_DIR} && exec {shlex.join(qwen)} > {PROBE_DIR}/{STREAM_NAME} </dev/null"
        config = qwen_settings(self.protocol, scenario.model, self.idle_timeout, self.sdk_retries)
        settings = (json.dumps(config, indent=2) + "\n").encode()
        env = {
            **_endpoint(self.protocol, ctx, scenario.model),
            # The environment's own opt-out of usage statistics, beside settings.json's.
            "QWEN_USAGE_STATISTICS_ENABLED": "false",
            # Qwen sizes its heap at half the host's memory (os.totalmem(), not the container's limit) and starts
            # itself a second time to get it: a second full start-up, and a heap the pod's memory cap cannot hold.
            "QWEN_CODE_NO_RELAUNCH": "true",
        }
        return Launch(command=["sh", "-c", script], environment=env, files={f"{HOME_QWEN}/settings.json": settings})

    def normalize(self, native_dir: Path) -> Rollout:
        return build_rollout(read_native(native_dir), self.name)

    def parse_version(self, output: str) -> str:
        found = _VERSION.findall(output)
        return f"qwen-code {found[-1]}" if found else super().parse_version(output)
