"""The reference harness: our own honest agent (the positive control) and its deliberately misreporting modes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

from orchestrator.evidence import FormatError, validate
from orchestrator.harnesses.base import Harness, Launch, LaunchContext, NormalizeError
from orchestrator.scenarios import Scenario

__all__ = ["ReferenceHarness"]

_ROLLOUT_DIR = "/home/probe/.probe-reference"


class ReferenceHarness(Harness):
    name = "reference"
    image = "reference"
    description = "harness-probe's own small agent (openai SDK, Chat Completions, real shell): the control"
    protocols = ("chat",)
    native_paths = (_ROLLOUT_DIR,)
    version_command = ("probe-reference", "--version")
    options_help: ClassVar[dict[str, str]] = {
        "mode": "honest (default) or a deliberate misbehaviour such as hang",
        "stream": "true to request SSE streams (default false)",
    }

    def launch(self, scenario: Scenario, ctx: LaunchContext) -> Launch:
        cmd = [
            "probe-reference",
            "--task",
            scenario.task,
            "--task-id",
            ctx.task_id or scenario.name,
            "--model",
            scenario.model,
            "--rollout",
            f"{_ROLLOUT_DIR}/rollout.json",
            "--mode",
            self.options.get("mode", "honest"),
        ]
        if self.options.get("stream", "false").lower() in ("1", "true", "yes"):
            cmd.append("--stream")
        env = {"OPENAI_BASE_URL": ctx.base_url, "OPENAI_API_KEY": ctx.api_key}
        return Launch(command=cmd, environment=env)

    def normalize(self, native_dir: Path) -> dict[str, Any]:
        # The reference agent writes the canonical format itself, so normalizing is reading and validating.
        path = native_dir / Path(_ROLLOUT_DIR).name / "rollout.json"
        if not path.is_file():
            raise NormalizeError(f"the harness wrote no rollout ({path.name} missing in native/)")
        try:
            data = json.loads(path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise NormalizeError(f"{path.name} is not JSON: {exc}") from None
        try:
            validate(data, "probe-rollout/v1", path.name)
        except FormatError as exc:
            raise NormalizeError(str(exc)) from None
        if not isinstance(data, dict):
            raise NormalizeError("rollout is not an object")
        return data
