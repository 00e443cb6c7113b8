"""Stirrup 0.2.1: launch preset (our driver around Stirrup's default client and tools) and its run-record normalizer."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from orchestrator.harnesses.base import Harness, Launch, LaunchContext
from orchestrator.harnesses.options import Integer
from orchestrator.harnesses.stirrup.rollout import FINISH_TOOL, RECORD_NAME, normalize_record
from orchestrator.records import Rollout
from orchestrator.scenarios import Scenario

__all__ = ["StirrupHarness"]

VENV = "/opt/stirrup"
# Our folder under HOME: the driver's run record and the session's output_dir, copied out whole.
PROBE_DIR = "/home/probe/.stirrup-probe"
# Where Stirrup caches the state of a run that did not finish (`~/.cache/stirrup/<task hash>/`): copied out as
# evidence of what it kept, though the normalizer reads only the run record.
CACHE_DIR = "/home/probe/.cache/stirrup"
# Per HTTP request (openai SDK `timeout`): a withheld reply is given up within the episode; the SDK's default
# (600 s) outlasts both the proxy's withhold cap and the episode timeout.
REQUEST_TIMEOUT_S = 15
# The openai SDK's own retries (Stirrup's default, 2): Stirrup has no retry loop of its own.
MAX_RETRIES = 2
# The catalogue's longest script is three replies; headroom for a harness that asks again.
MAX_TURNS = 10


class StirrupHarness(Harness):
    name = "stirrup"
    image = "stirrup"
    description = (
        "Stirrup 0.2.1 (a library; our driver runs one session with its default ChatCompletionsClient and tools: "
        "Chat Completions, not streamed, shell through code_exec{cmd}, ends through finish{reason, paths})"
    )
    protocols = ("chat",)
    native_paths = (PROBE_DIR, CACHE_DIR)
    version_command = (
        f"{VENV}/bin/python",
        "-c",
        "from importlib.metadata import version; print('stirrup', version('stirrup'))",
    )
    options_declared = (
        Integer("request_timeout", REQUEST_TIMEOUT_S, "seconds the openai SDK waits for one reply", minimum=1),
        Integer("max_retries", MAX_RETRIES, "the openai SDK's retries per model call", minimum=0),
    )

    def __init__(self, options: dict[str, str] | None = None) -> None:
        super().__init__(options)
        self.request_timeout = self.settings.integer("request_timeout")
        self.max_retries = self.settings.integer("max_retries")

    def harness_profile(self) -> dict[str, Any] | None:
        # Stirrup ends only through its finish tool (a text reply gets "Please continue the task").
        return {"final_answer": {"via": "tool", "tool": FINISH_TOOL, "argument": "reason"}}

    def launch(self, scenario: Scenario, ctx: LaunchContext) -> Launch:
        env = {
            "PROBE_MODEL": scenario.model,
            "PROBE_BASE_URL": ctx.base_url,
            "PROBE_API_KEY": ctx.api_key,
            "PROBE_REQUEST_TIMEOUT": str(self.request_timeout),
            "PROBE_MAX_RETRIES": str(self.max_retries),
            "PROBE_MAX_TURNS": str(MAX_TURNS),
            "PROBE_OUTPUT_DIR": f"{PROBE_DIR}/output",
            "PROBE_RECORD": f"{PROBE_DIR}/{RECORD_NAME}",
        }
        # stdin closed: nothing may wait on a prompt. No BRAVE_API_KEY: web_search stays off.
        command = ["sh", "-c", 'exec "$@" </dev/null', "probe-stirrup", "probe-stirrup", scenario.task]
        return Launch(command=command, environment=env)

    def normalize(self, native_dir: Path) -> Rollout:
        return normalize_record(native_dir / Path(PROBE_DIR).name / RECORD_NAME, self.name)

    def parse_version(self, output: str) -> str:
        found = [ln.strip() for ln in output.splitlines() if re.search(r"\d+\.\d+", ln)]
        return found[-1] if found else ""
