"""Claude Code 2.1.328 (npm @anthropic-ai/claude-code): launch preset, native log locations and the normalizer."""

from __future__ import annotations

import re
from pathlib import Path

from orchestrator.harnesses.base import Harness, Launch, LaunchContext
from orchestrator.harnesses.claude_code.native import CONFIG_NAME, PROBE_NAME, STREAM_NAME, read_native
from orchestrator.harnesses.claude_code.rollout import build_rollout
from orchestrator.records import Rollout
from orchestrator.scenarios import Scenario

__all__ = ["CONFIG_DIR", "PROBE_DIR", "STREAM_NAME", "ClaudeCodeHarness"]

# CLAUDE_CONFIG_DIR: where Claude Code keeps its settings and its session transcripts (projects/<cwd>/<id>.jsonl).
CONFIG_DIR = f"/home/probe/{CONFIG_NAME}"
# Our own folder: the stream-json Claude Code prints on stdout, redirected to a file so it is collected untouched.
PROBE_DIR = f"/home/probe/{PROBE_NAME}"
# Per HTTP request, in ms. API_TIMEOUT_MS (default 600 s) bounds a request as a whole; a stream that sent its
# headers and then went silent is bounded only by the byte watchdog (CLAUDE_BYTE_STREAM_IDLE_TIMEOUT_MS, which
# Claude Code clamps to at least 10 s): measured, a withheld reply was given up after 20 s and retried, whereas with
# API_TIMEOUT_MS alone it waited out the whole episode. CLAUDE_STREAM_IDLE_TIMEOUT_MS cannot help: its floor is 300 s.
REQUEST_TIMEOUT_MS = 20_000
# Claude Code's own retry budget (CLAUDE_CODE_MAX_RETRIES, default 10 with exponential backoff from about 0.5 s):
# the catalogue never needs more than two retries in a row, and a small budget keeps a persistent failure well
# inside the episode.
MAX_RETRIES = 4
_VERSION = re.compile(r"\d+\.\d+\.\d+\S*(?: \(Claude Code\))?")


class ClaudeCodeHarness(Harness):
    name = "claude-code"
    image = "claude-code"
    description = (
        "Claude Code 2.1.328 (npm @anthropic-ai/claude-code, native binary): `claude -p` with stream-json, "
        "Anthropic Messages"
    )
    protocols = ("messages",)
    native_paths = (CONFIG_DIR, PROBE_DIR)
    version_command = ("claude", "--version")

    def launch(self, scenario: Scenario, ctx: LaunchContext) -> Launch:
        stream = f"{PROBE_DIR}/{STREAM_NAME}"
        claude = [
            "claude",
            "-p",
            scenario.task,
            "--model",
            scenario.model,
            "--dangerously-skip-permissions",
            "--output-format",
            "stream-json",
            "--verbose",
        ]
        # stdout (the stream-json events) goes to a native file; stderr stays in harness.log. stdin is closed so
        # `-p` never waits for piped input.
        command = ["sh", "-c", f'mkdir -p {PROBE_DIR} && exec "$@" </dev/null >{stream}', "claude", *claude]
        model = scenario.model
        env = {
            # The SDK appends /v1/messages itself.
            "ANTHROPIC_BASE_URL": ctx.base_url.rstrip("/").removesuffix("/v1"),
            "ANTHROPIC_API_KEY": ctx.api_key,
            # Background and side requests (titles, summaries, sub-agents) use the scripted model as well.
            "ANTHROPIC_MODEL": model,
            "ANTHROPIC_SMALL_FAST_MODEL": model,
            "ANTHROPIC_DEFAULT_HAIKU_MODEL": model,
            "ANTHROPIC_DEFAULT_SONNET_MODEL": model,
            "ANTHROPIC_DEFAULT_OPUS_MODEL": model,
            "CLAUDE_CODE_SUBAGENT_MODEL": model,
            "CLAUDE_CONFIG_DIR": CONFIG_DIR,
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "API_TIMEOUT_MS": str(REQUEST_TIMEOUT_MS),
            "CLAUDE_ENABLE_BYTE_WATCHDOG": "1",
            "CLAUDE_BYTE_STREAM_IDLE_TIMEOUT_MS": str(REQUEST_TIMEOUT_MS),
            "CLAUDE_CODE_MAX_RETRIES": str(MAX_RETRIES),
        }
        return Launch(command=command, environment=env)

    def normalize(self, native_dir: Path) -> Rollout:
        return build_rollout(read_native(native_dir), self.name)

    def parse_version(self, output: str) -> str:
        found = _VERSION.search(output)
        return found.group(0) if found else super().parse_version(output)
