"""Codex CLI (openai/codex) 0.169.0: launch preset, native log locations and the rollout normalizer."""

from __future__ import annotations

import re
from pathlib import Path

from orchestrator.harnesses.base import Harness, Launch, LaunchContext
from orchestrator.harnesses.codex.native import EVENTS_NAME, read_native
from orchestrator.harnesses.codex.rollout import build_rollout
from orchestrator.harnesses.options import Integer
from orchestrator.records import Rollout
from orchestrator.scenarios import Scenario

__all__ = ["CODEX_HOME", "CodexHarness", "codex_config"]

CODEX_HOME = "/home/probe/.codex"
# Our own folder under HOME for the `--json` stdout events (Codex writes nothing there itself).
PROBE_DIR = "/home/probe/.codex-probe"
KEY_VARIABLE = "PROBE_API_KEY"
PROVIDER_ID = "probe"
# Milliseconds of SSE silence before Codex drops a stream and reconnects (default 300000, longer than an
# episode): a withheld reply is then abandoned and retried well inside the episode timeout.
IDLE_TIMEOUT_MS = 20_000
# Codex's defaults, stated so the run records them: the HTTP layer retries 5xx/transport errors 4 times, the
# stream layer reconnects 5 times. Worst case (every attempt withheld): 6 x 20 s, inside a 300 s episode.
REQUEST_MAX_RETRIES = 4
STREAM_MAX_RETRIES = 5
_VERSION = re.compile(r"codex-cli \S+")


def codex_config(scenario: Scenario, ctx: LaunchContext, options: dict[str, int]) -> str:
    """$CODEX_HOME/config.toml for one episode: the scripted provider, approvals off, telemetry and updates off."""
    return f"""model = {_toml(scenario.model)}
model_provider = "{PROVIDER_ID}"
# The container is the sandbox; --dangerously-bypass-approvals-and-sandbox says the same on the command line.
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"

[model_providers.{PROVIDER_ID}]
name = "{PROVIDER_ID}"
base_url = {_toml(ctx.base_url)}
env_key = "{KEY_VARIABLE}"
wire_api = "responses"
request_max_retries = {options["request_max_retries"]}
stream_max_retries = {options["stream_max_retries"]}
stream_idle_timeout_ms = {options["stream_idle_timeout_ms"]}
"""


class CodexHarness(Harness):
    name = "codex"
    image = "codex"
    description = "Codex CLI 0.169.0 (npm @openai/codex): `codex exec --json`, custom Responses provider"
    protocols = ("responses",)
    native_paths = (f"{CODEX_HOME}/sessions", PROBE_DIR)
    version_command = ("codex", "--version")
    options_declared = (
        Integer("stream_idle_timeout_ms", IDLE_TIMEOUT_MS, "SSE idle timeout before Codex reconnects", minimum=0),
        Integer("request_max_retries", REQUEST_MAX_RETRIES, "HTTP-layer retries of 5xx/transport errors", minimum=0),
        Integer("stream_max_retries", STREAM_MAX_RETRIES, "stream-layer reconnects", minimum=0),
    )

    def launch(self, scenario: Scenario, ctx: LaunchContext) -> Launch:
        codex = [
            "codex",
            "exec",
            # Unknown config keys are an error, not silently ignored: every setting above is really applied.
            "--strict-config",
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
            "--json",
            scenario.task,
        ]
        # stdout (the --json events) into a file we collect; stderr stays on the container log; stdin closed,
        # since Codex otherwise waits for more prompt text on a piped stdin.
        events = f"{PROBE_DIR}/{Path(EVENTS_NAME).name}"
        command = ["sh", "-c", f'mkdir -p {PROBE_DIR} && exec "$@" </dev/null >{events}', "codex", *codex]
        env = {"CODEX_HOME": CODEX_HOME, KEY_VARIABLE: ctx.api_key}
        counts = {o.name: self.settings.integer(o.name) for o in self.options_declared}
        config = codex_config(scenario, ctx, counts).encode()
        return Launch(command=command, environment=env, files={f"{CODEX_HOME}/config.toml": config})

    def normalize(self, native_dir: Path) -> Rollout:
        return build_rollout(read_native(native_dir))

    def parse_version(self, output: str) -> str:
        # `codex --version` prints "codex-cli X.Y.Z"; anything the launcher warns about comes on other lines.
        found = _VERSION.findall(output)
        return found[-1] if found else super().parse_version(output)


def _toml(value: str) -> str:
    # A TOML basic string is a JSON string for the characters a model name or URL can hold.
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
