"""The launch OpenCode and its fork share: the config naming the scripted provider, and the script that keeps the
JSON event stream and the printed log where they are collected."""

from __future__ import annotations

import shlex
from typing import Any

from orchestrator.harnesses.base import LaunchContext
from orchestrator.harnesses.opencode_family.store import STDERR_LOG
from orchestrator.scenarios import Scenario

__all__ = ["CHUNK_TIMEOUT_MS", "PACKAGES", "PROVIDER", "REQUEST_TIMEOUT_MS", "config", "script"]

PROVIDER = "probe"
# Our protocol names -> the AI SDK provider package that speaks each; all three are bundled in the binaries (a
# package that is not is installed from the registry at run time, which the pod cannot reach).
PACKAGES = {"chat": "@ai-sdk/openai-compatible", "responses": "@ai-sdk/openai", "messages": "@ai-sdk/anthropic"}
# provider.options.chunkTimeout: the harness aborts a stream that sends no SSE chunk for this long ("SSE read timed
# out", which its retry policy retries). Its default, 300 s, is the whole episode; 20 s leaves room to retry.
CHUNK_TIMEOUT_MS = 20_000
# provider.options.timeout: a deadline on the whole request (headers and body), for a server that never answers.
REQUEST_TIMEOUT_MS = 120_000


def config(scenario: Scenario, ctx: LaunchContext, schema: str, protocol: str = "chat") -> dict[str, Any]:
    """The config file: the scripted provider speaking `protocol`, no side agents, no prompts."""
    return {
        "$schema": schema,
        "autoupdate": False,
        "share": "disabled",
        "enabled_providers": [PROVIDER],
        "model": f"{PROVIDER}/{scenario.model}",
        "small_model": f"{PROVIDER}/{scenario.model}",
        "provider": {
            PROVIDER: {
                "npm": PACKAGES[protocol],
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


def script(run: list[str], probe_dir: str) -> list[str]:
    """`sh -c` running `run` with its JSON event stream and its log (`--print-logs`) in files we collect untouched.

    The log is printed to stderr because the log file the harness keeps loses its last lines when it exits; stderr
    is written as it goes. It is copied to our stderr afterwards, so harness.log still shows it (unless the run is
    killed), and the harness's own exit code is kept.
    """
    out, err = f"{probe_dir}/events.jsonl", f"{probe_dir}/{STDERR_LOG}"
    return [
        "sh",
        "-c",
        f"mkdir -p {probe_dir} && {shlex.join(run)} > {out} 2> {err}; code=$?; cat {err} >&2; exit $code",
    ]
