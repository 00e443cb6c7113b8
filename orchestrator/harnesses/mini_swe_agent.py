"""mini-SWE-agent 2.4.6: launch preset (litellm, Chat Completions, one `bash` tool) and its trajectory normalizer."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from orchestrator.harnesses.base import Harness, Launch, LaunchContext
from orchestrator.harnesses.mini_swe_agent_normalize import TRAJECTORY_NAME, normalize_trajectory
from orchestrator.harnesses.options import Integer
from orchestrator.records import Rollout
from orchestrator.scenarios import Scenario

__all__ = ["MiniSweAgentHarness"]

VENV = "/opt/mini-swe-agent"
# Our own folder under HOME: the trajectory (-o) and our config file, copied out whole.
PROBE_DIR = "/home/probe/.mini-swe-agent-probe"
# mini's global config dir (platformdirs under HOME): a `.env` and anything else it decides to keep there.
GLOBAL_DIR = "/home/probe/.config/mini-swe-agent"
# Printed by a command whose output mini takes as its submission (minisweagent/environments/local.py).
SUBMIT_PREFIX = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
# Per HTTP request (litellm `timeout`): a withheld reply makes litellm give up and mini retry well inside the
# episode; litellm's default (600 s) outlasts both the proxy's withhold cap and the episode timeout.
REQUEST_TIMEOUT_S = 15
# mini's own retry loop (tenacity, 4 s doubling to 60 s) retries every error but auth/not-found, 400 included.
# Its default of 10 attempts waits about 6 minutes on a terminal error, longer than the episode timeout, so the
# run would be killed before mini writes down how it ended; 4 attempts (28 s of waits) keeps that evidence and
# still covers the catalogue's longest fault sequence (two 429s, then a success).
RETRY_ATTEMPTS = 4


class MiniSweAgentHarness(Harness):
    name = "mini-swe-agent"
    image = "mini-swe-agent"
    description = (
        "mini-SWE-agent 2.4.6 (litellm 1.110.2, Chat Completions, not streamed, one bash tool; "
        "ends only through a shell command printing COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT)"
    )
    protocols = ("chat",)
    native_paths = (PROBE_DIR, GLOBAL_DIR)
    # Imported with its startup banner silenced, mini prints its own `__version__` and nothing else.
    version_command = (
        "env",
        "MSWEA_SILENT_STARTUP=1",
        f"{VENV}/bin/python",
        "-c",
        "import minisweagent; print('mini-swe-agent', minisweagent.__version__)",
    )
    final_answer_via_shell = SUBMIT_PREFIX
    options_declared = (
        Integer("request_timeout", REQUEST_TIMEOUT_S, "seconds litellm waits for one reply", minimum=1),
        Integer(
            "retry_attempts",
            RETRY_ATTEMPTS,
            "MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT, mini's attempts per step",
            minimum=1,
        ),
    )

    def __init__(self, options: dict[str, str] | None = None) -> None:
        super().__init__(options)
        self.request_timeout = self.settings.integer("request_timeout")
        self.retry_attempts = self.settings.integer("retry_attempts")

    def launch(self, scenario: Scenario, ctx: LaunchContext) -> Launch:
        config_path = f"{PROBE_DIR}/probe.yaml"
        # `-c` replaces mini's default config, so the built-in mini.yaml is named first and ours merged over it.
        config = {"model": {"model_kwargs": {"timeout": self.request_timeout}}}
        mini = [
            "mini",
            "-m",
            f"openai/{scenario.model}",
            "-t",
            scenario.task,
            "-y",
            "--exit-immediately",
            "-l",
            "0",
            "-c",
            "mini.yaml",
            "-c",
            config_path,
            "-o",
            f"{PROBE_DIR}/{TRAJECTORY_NAME}",
        ]
        # stdin closed explicitly: mini must never wait on a prompt.
        command = ["sh", "-c", 'exec "$@" </dev/null', "mini", *mini]
        env = {
            "MSWEA_CONFIGURED": "true",
            "OPENAI_API_KEY": ctx.api_key,
            "OPENAI_API_BASE": ctx.base_url,
            # Else litellm fetches its price map from GitHub at import (egress), and cost lookup of an unknown
            # model aborts the run.
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "MSWEA_COST_TRACKING": "ignore_errors",
            "MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT": str(self.retry_attempts),
        }
        files = {config_path: yaml.safe_dump(config, sort_keys=True).encode()}
        return Launch(command=command, environment=env, files=files)

    def normalize(self, native_dir: Path) -> Rollout:
        return normalize_trajectory(native_dir / Path(PROBE_DIR).name / TRAJECTORY_NAME, self.name)

    def parse_version(self, output: str) -> str:
        # The last line that names a version: anything a dependency prints on import comes before it.
        found = [ln.strip() for ln in output.splitlines() if re.search(r"\d+\.\d+", ln)]
        return found[-1] if found else ""
