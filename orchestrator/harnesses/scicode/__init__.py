"""SciCode (nvidia-scicode 26.3, NeMo Evaluator's `scicode_eval`): launch preset, problem file, normalizer."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from orchestrator.harnesses.base import Harness, Launch, LaunchContext
from orchestrator.harnesses.scicode.rollout import normalize_output
from orchestrator.records import Rollout
from orchestrator.scenarios import Scenario

__all__ = ["OUTPUT_DIR", "PROBLEM_ID", "SciCodeHarness", "problem_file"]

VENV = "/opt/scicode"
# scicode_eval's --output-dir: prompt/, generated_code/ and the score files; its --log-dir (per-step pass/fail)
# is put below it, so one native path holds all SciCode writes.
OUTPUT_DIR = "/home/probe/scicode"
PROBLEMS = "/home/probe/probe-problems.jsonl"
PROBLEM_ID = "probe"
_VERSION = re.compile(r"nvidia-scicode \d+\S*")


def problem_file(scenario: Scenario) -> bytes:
    """One SciCode problem with one sub-step per scripted step, each asking for the scenario's task.

    SciCode sends one request per sub-step, so the script's steps and its requests line up. The sub-steps have no
    test cases: SciCode's scoring then only runs each sub-step's accumulated code (a pass is a clean exit).
    """
    steps = len(scenario.data["script"])
    sub_steps = [
        {
            "step_number": f"{PROBLEM_ID}.{i}",
            "step_description_prompt": f"{scenario.task}\n(Step {i} of {steps}.)",
            "step_background": "",
            "function_header": f"def probe_step_{i}():\n    '''Step {i} of {steps}.'''",
            "return_line": "    return None",
            "test_cases": [],
        }
        for i in range(1, steps + 1)
    ]
    problem = {
        "problem_name": "harness_probe",
        "problem_id": PROBLEM_ID,
        "problem_description_main": scenario.task,
        "problem_io": "",
        "required_dependencies": "",
        "sub_steps": sub_steps,
    }
    return (json.dumps(problem, ensure_ascii=False) + "\n").encode()


class SciCodeHarness(Harness):
    name = "scicode"
    image = "scicode"
    description = (
        "SciCode (nvidia-scicode 26.3, NeMo Evaluator's scicode_eval; Chat Completions via requests, not streamed, "
        "no tools: one python block per sub-step, run only in its scoring phase; writes prompts, code, pass/fail)"
    )
    protocols = ("chat",)
    native_paths = (OUTPUT_DIR,)
    version_command = (
        f"{VENV}/bin/python",
        "-c",
        "from importlib.metadata import version; print('nvidia-scicode', version('nvidia-scicode'))",
    )

    def launch(self, scenario: Scenario, ctx: LaunchContext) -> Launch:
        scicode = [
            "probe-scicode",
            PROBLEMS,
            "--model",
            scenario.model,
            "--url",
            f"{ctx.base_url}/chat/completions",
            "--output-dir",
            OUTPUT_DIR,
            "--log-dir",
            f"{OUTPUT_DIR}/logs",
            "--eval-threads",
            "1",
        ]
        # stdin closed; SciCode's scoring writes its scripts to tmp_<time>/ in the working directory.
        command = ["sh", "-c", 'cd "$HOME" && exec "$@" </dev/null', "probe-scicode", *scicode]
        env = {"API_KEY": ctx.api_key, "TZ": "UTC"}
        return Launch(command=command, environment=env, files={PROBLEMS: problem_file(scenario)})

    def harness_profile(self) -> dict[str, Any] | None:
        return {"delivery": "python_blocks"}

    def normalize(self, native_dir: Path) -> Rollout:
        return normalize_output(native_dir / Path(OUTPUT_DIR).name, self.name)

    def parse_version(self, output: str) -> str:
        found = _VERSION.findall(output)
        return found[-1] if found else ""
