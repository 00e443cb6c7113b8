"""NOOA 0.0.10 (nooa-bench's `nemo-harbor` runner with BenchAgent): launch preset, native log location, normalizer."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar

from orchestrator.harnesses.base import Harness, Launch, LaunchContext
from orchestrator.harnesses.nooa.rollout import FINISH_TOOL, normalize_logs
from orchestrator.records import Rollout
from orchestrator.scenarios import Scenario

__all__ = ["ANSWER_DIR", "LOGS_DIR", "NooaHarness"]

VENV = "/opt/nooa"
# The runner's paths are hard-coded (nooa_bench.runner): nooa_bench.log, result.json, trajectory.json and the
# OTel span files under traces/ go to /logs/agent; the answer text to /app/answer.txt.
LOGS_DIR = "/logs/agent"
ANSWER_DIR = "/app"
_VERSION = re.compile(r"nooa \d+\.\d+\.\d+\S*")


class NooaHarness(Harness):
    name = "nooa"
    image = "nooa"
    description = (
        "NOOA 0.0.10 (nooa-bench's nemo-harbor runner, BenchAgent; LiteLLM 1.110.2 Chat Completions, not streamed; "
        "shell through execute_python{code} cells awaiting self.shell.run, ends through return_result{result: "
        "TaskResult}; writes trajectory.json, OTel span files and result.json under /logs/agent)"
    )
    protocols = ("chat",)
    native_paths = (LOGS_DIR, ANSWER_DIR)
    # The runner writes to fixed paths outside HOME: they are mounted writable (in memory) over the read-only root.
    writable_paths: ClassVar[dict[str, str]] = {
        "/home/probe": "1g",
        "/tmp": "512m",
        LOGS_DIR: "256m",
        ANSWER_DIR: "16m",
    }
    version_command = (
        f"{VENV}/bin/python",
        "-c",
        "from importlib.metadata import version; print('nooa', version('nooa'))",
    )

    def harness_profile(self) -> dict[str, Any] | None:
        # BenchAgent ends only through return_result{result: TaskResult}: a text reply becomes a "task is NOT
        # finished" comment cell. TaskResult's three required texts all carry the answer (the runner reports
        # command_to_verify as its response and judges success by solution_description).
        return {"final_answer": {"via": "tool", "tool": FINISH_TOOL, "argument": "result"}}

    def launch(self, scenario: Scenario, ctx: LaunchContext) -> Launch:
        runner = [
            "nemo-harbor",
            "--instruction",
            scenario.task,
            "--model",
            f"openai/{scenario.model}",
            "--api-base",
            ctx.base_url,
            "--agent-type",
            "bench",
            "--working-dir",
            ctx.workdir,
        ]
        env = {
            "OPENAI_API_KEY": ctx.api_key,
            # litellm would fetch its price map from GitHub at import (egress); the packaged copy is enough.
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            # The runner probes an OTLP viewer (default localhost:5001, nothing listens in the pod) and then writes
            # span files only; a short probe keeps that from costing the episode two seconds.
            "OTLP_PROBE_TIMEOUT": "0.5",
            "TZ": "UTC",
        }
        # stdin closed: nothing may wait on a prompt.
        return Launch(command=["sh", "-c", 'exec "$@" </dev/null', "nemo-harbor", *runner], environment=env)

    def normalize(self, native_dir: Path) -> Rollout:
        return normalize_logs(native_dir / Path(LOGS_DIR).name, native_dir / Path(ANSWER_DIR).name, self.name)

    def parse_version(self, output: str) -> str:
        found = _VERSION.findall(output)
        return found[-1] if found else ""
