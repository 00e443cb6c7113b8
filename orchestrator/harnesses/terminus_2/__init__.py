"""Terminus 2 (terminus-ai 2.0.4 on harbor 0.26.0): launch preset, native log location and normalizer."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar

from orchestrator.harnesses.base import Harness, Launch, LaunchContext
from orchestrator.harnesses.options import Integer
from orchestrator.harnesses.terminus_2.rollout import normalize_logs
from orchestrator.records import Rollout
from orchestrator.scenarios import Scenario

__all__ = ["LOGS_DIR", "Terminus2Harness"]

VENV = "/opt/terminus"
# Terminus's logs dir (-l): trajectory.json, context.json, episode-N/{debug.json,prompt.txt,response.txt}. It is
# also where Terminus records the pane (/logs/agent/recording.cast is hard-coded in harbor's EnvironmentPaths).
LOGS_DIR = "/logs/agent"
_VERSION = re.compile(r"terminus-ai \d+\.\d+\.\d+\S*")


class Terminus2Harness(Harness):
    name = "terminus-2"
    image = "terminus-2"
    description = (
        "Terminus 2 (terminus-ai 2.0.4, harbor 0.26.0, litellm 1.110.2; Chat Completions, not streamed, no tools: "
        "keystroke JSON typed into tmux, task_complete twice; writes ATIF trajectory.json)"
    )
    protocols = ("chat",)
    native_paths = (LOGS_DIR,)
    # The root filesystem is read-only, and Terminus writes below its logs dir (trajectory, episodes, the
    # `environment/` and `agent/` dirs of its TrialPaths) and records the pane to the hard-coded LOGS_DIR.
    writable_paths: ClassVar[dict[str, str]] = {**Harness.writable_paths, LOGS_DIR: "256m"}
    version_command = (
        f"{VENV}/bin/python",
        "-c",
        "from importlib.metadata import version; print('terminus-ai', version('terminus-ai'))",
    )
    options_declared = (
        Integer(
            "request_timeout",
            None,
            "seconds LiteLLM waits for one reply (its REQUEST_TIMEOUT; unset: LiteLLM's own, 6000)",
            minimum=1,
        ),
    )

    def __init__(self, options: dict[str, str] | None = None) -> None:
        super().__init__(options)
        # Unset, Terminus runs as shipped: the golden table is of that (it outwaits harness_deadline).
        timeout = self.settings.optional_integer("request_timeout")
        self.request_timeout = None if timeout is None else str(timeout)

    def launch(self, scenario: Scenario, ctx: LaunchContext) -> Launch:
        terminus = [
            "terminus",
            scenario.task,
            "-m",
            f"openai/{scenario.model}",
            "--api-base",
            ctx.base_url,
            "-l",
            LOGS_DIR,
            "-w",
            ctx.workdir,
        ]
        command = ["sh", "-c", 'exec "$@" </dev/null', "terminus", *terminus]
        env = {
            "OPENAI_API_KEY": ctx.api_key,
            # litellm would fetch its price map from GitHub at import (egress); the packaged copy is enough.
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            # Naive times in debug.json are local times: the normalizer reads them as UTC.
            "TZ": "UTC",
        }
        if self.request_timeout is not None:
            env["REQUEST_TIMEOUT"] = self.request_timeout
        return Launch(command=command, environment=env)

    def harness_profile(self) -> dict[str, Any] | None:
        return {"delivery": "keystrokes"}

    def normalize(self, native_dir: Path) -> Rollout:
        return normalize_logs(native_dir / Path(LOGS_DIR).name, self.name)

    def parse_version(self, output: str) -> str:
        found = _VERSION.findall(output)
        return found[-1] if found else ""
