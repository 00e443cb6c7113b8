"""CrewAI 1.15.30: launch preset (our driver around one crew of CrewAI's own agent, task and LLM) and its normalizer."""

from __future__ import annotations

import re
from pathlib import Path

from orchestrator.harnesses.base import Harness, Launch, LaunchContext
from orchestrator.harnesses.crewai.record import EVENTS_NAME, RECORD_NAME, read_native
from orchestrator.harnesses.crewai.rollout import build_rollout
from orchestrator.harnesses.options import Choice, Integer
from orchestrator.records import Rollout
from orchestrator.scenarios import Scenario

__all__ = ["PROBE_DIR", "PROTOCOLS", "CrewAIHarness"]

VENV = "/opt/crewai"
# Our folder under HOME: the driver's run record and CrewAI's event log, copied out whole.
PROBE_DIR = "/home/probe/.crewai-probe"
# Where CrewAI keeps the task outputs of its latest kickoff (SQLite, named after the working directory): copied
# out as evidence of what it kept, though the normalizer reads only the run record and the events.
STORE_DIR = "/home/probe/.local/share/work"
# The provider APIs CrewAI's native providers speak to a custom base URL: its OpenAI provider's two `api`s and its
# Anthropic provider (the Anthropic SDK, from the `anthropic` extra).
PROTOCOLS = ("chat", "responses", "messages")
# Per HTTP request (the SDKs' `timeout`): a withheld reply is given up within the episode; the SDKs' defaults
# (600 s) outlast the episode.
REQUEST_TIMEOUT_S = 15
# The provider SDK's own retries as CrewAI ships them (LLM.max_retries, 2).
MAX_RETRIES = 2


class CrewAIHarness(Harness):
    name = "crewai"
    image = "crewai"
    description = (
        "CrewAI 1.15.30 (a library; our driver kicks off one crew: one agent with a bash tool, one task, CrewAI's "
        "native OpenAI or Anthropic provider: Chat Completions, Responses or Messages, not streamed; its event bus "
        "and kickoff result are the record)"
    )
    protocols = PROTOCOLS
    native_paths = (PROBE_DIR, STORE_DIR)
    version_command = (
        f"{VENV}/bin/python",
        "-c",
        "from importlib.metadata import version; print('crewai', version('crewai'))",
    )
    options_declared = (
        Choice("protocol", PROTOCOLS, "chat", "the provider API CrewAI's LLM speaks"),
        Integer("request_timeout", REQUEST_TIMEOUT_S, "seconds the provider SDK waits for one reply", minimum=1),
        Integer("max_retries", MAX_RETRIES, "the provider SDK's retries per model call (LLM.max_retries)", minimum=0),
    )

    def __init__(self, options: dict[str, str] | None = None) -> None:
        super().__init__(options)
        self.protocol = self.settings.text("protocol")
        self.request_timeout = self.settings.integer("request_timeout")
        self.max_retries = self.settings.integer("max_retries")

    def launch(self, scenario: Scenario, ctx: LaunchContext) -> Launch:
        env = {
            "PROBE_PROTOCOL": self.protocol,
            "PROBE_MODEL": scenario.model,
            "PROBE_BASE_URL": ctx.base_url,
            "PROBE_API_KEY": ctx.api_key,
            "PROBE_REQUEST_TIMEOUT": str(self.request_timeout),
            "PROBE_MAX_RETRIES": str(self.max_retries),
            "PROBE_RECORD": f"{PROBE_DIR}/{RECORD_NAME}",
            "PROBE_EVENTS": f"{PROBE_DIR}/{EVENTS_NAME}",
            # CrewAI's own opt-outs: no anonymous telemetry (OTLP to telemetry.crewai.com), no trace upload to
            # its platform, and no first-run prompt about traces.
            "CREWAI_DISABLE_TELEMETRY": "true",
            "OTEL_SDK_DISABLED": "true",
            "CREWAI_TRACING_ENABLED": "false",
        }
        # stdin closed: nothing may wait on a prompt.
        command = ["sh", "-c", 'exec "$@" </dev/null', "probe-crewai", "probe-crewai", scenario.task]
        return Launch(command=command, environment=env)

    def normalize(self, native_dir: Path) -> Rollout:
        return build_rollout(read_native(native_dir / Path(PROBE_DIR).name), self.name)

    def parse_version(self, output: str) -> str:
        found = [ln.strip() for ln in output.splitlines() if re.search(r"\d+\.\d+", ln)]
        return found[-1] if found else ""
