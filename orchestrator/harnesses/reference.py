"""The reference harness: our own honest agent (the positive control) and its deliberately misreporting modes."""

from __future__ import annotations

from pathlib import Path
from typing import cast

from orchestrator.harnesses.base import Harness, Launch, LaunchContext, NormalizeError
from orchestrator.harnesses.jsonl import loads_line
from orchestrator.harnesses.options import Choice, Flag, Text
from orchestrator.records import Rollout
from orchestrator.scenarios import Scenario

__all__ = ["ReferenceHarness"]

_ROLLOUT_DIR = "/home/probe/.probe-reference"

# The agent's run modes (images/reference/probe_reference/modes.py; a unit test keeps the two lists equal).
# Misreporting modes rewrite only the rollout: on the wire the agent behaves exactly as in honest mode.
MODES: dict[str, str] = {
    "honest": "report exactly what happened (default)",
    "hang": "sleep before the first model call until killed (orchestrator timeout)",
    "drop_failed_attempt": "omit the first non-2xx model call",
    "wrong_tokens": "report total tokens + 1 for the first call with a known total",
    "alter_tool_output": "append ' (edited)' to the first tool output, in the record and the history",
    "drop_tool_record": "omit the first tool execution record",
    "lost_ownership": "the first model call is owned by no invocation",
    "wrong_answer_report": "report a final answer the model never gave",
    "duplicate_attempt": "report the first failed model call twice",
    "swallow_error": "end an error outcome with no word of what failed",
    "wrong_wait": "claim 10 s more wait before the first retry than was taken",
    "impatient": "retry a 429 or 5xx itself after 0.2 s, whatever Retry-After asks (and record that honestly)",
    "repair_arguments": "record cut-off tool arguments as the object a lenient parser makes",
    "own_turn": "write an assistant turn of its own before the first call, and record it marked as its own (honest)",
    "unmarked_turn": "write an assistant turn of its own before the first call, recorded as the model's",
    "stream_mislabel": "when streaming, record every success as finishing with `stop`",
    "hostile-network": "try to leave the pod (host, metadata, public addresses; the proxy's ports), then the task",
    "hostile-cpu": "burn every CPU until killed",
    "hostile-fork": "fork until the pids limit stops it",
    "hostile-version": "a --version that never ends (then the task, honestly)",
    # Hostile modes (tests/integration/test_hostile_collect.py): attacks on collection and the proxy.
    "hostile-files": "leave links, `..` loops, a FIFO and a device in native/ and markers",
    "hostile-sparse": "leave a 100 GiB sparse file before the rollout in native/",
    "hostile-marker": "make each marker a FIFO or a link to /dev/zero",
    "hostile-deep-body": "send one request nested 3000 levels deep first",
    # Attacks on the witness and the proxy's memory (tests/integration/test_hostile_witness.py).
    "hostile-body-flood": "send 24 request bodies of 16 MiB first (to fill the witness)",
    "hostile-chunked-body": "stream one 1.5 GiB chunked request body first (to fill the proxy's memory)",
    # Hostile modes (tests/integration/test_hostile_readers.py): attacks on the readers after collection.
    "hostile-surrogate": "a lone surrogate in the rollout, non-UTF-8 file names in native/",
    "hostile-atif-calls": "a trajectory.json whose one step stands for 10^15 LLM calls",
    "hostile-atif-strict": "a trajectory.json with a duplicate key and a huge integer; a linked one",
    "hostile-deep-tree": "the rollout moved 1,100 folders deep",
}
PROTOCOLS = ("chat", "responses", "messages", "gemini")
# Per HTTP request: a withheld reply makes the SDK give up and retry well within the episode.
REQUEST_TIMEOUT_S = 15
TARGETS_ENV = "PROBE_HOSTILE_TARGETS"  # images/reference/probe_reference/hostile_sandbox.py


class ReferenceHarness(Harness):
    name = "reference"
    image = "reference"
    description = (
        "harness-probe's own small agent (openai SDK: Chat Completions or Responses; anthropic SDK: Messages; "
        "google-genai: Gemini generateContent; real shell): the control"
    )
    protocols = PROTOCOLS
    # `run --compare-stream` plays each scenario again with this option flipped (JSON <-> SSE).
    stream_option = "stream"
    native_paths = (_ROLLOUT_DIR,)
    version_command = ("probe-reference", "--version")
    options_declared = (
        Choice("mode", tuple(MODES), "honest", "how the agent behaves: honest, or one planted fault (see MODES)"),
        Flag("stream", False, "true to request SSE streams"),
        Choice("protocol", PROTOCOLS, "chat", "the provider API the agent speaks"),
        Text(
            "targets", None, "comma-separated addresses mode hostile-network tries to reach (unset: a few usual ones)"
        ),
    )

    def __init__(self, options: dict[str, str] | None = None) -> None:
        super().__init__(options)
        self.mode = self.settings.text("mode")
        self.protocol = self.settings.text("protocol")
        self.stream = self.settings.flag("stream")

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
            self.mode,
            "--protocol",
            self.protocol,
            "--timeout",
            str(REQUEST_TIMEOUT_S),
        ]
        if self.stream:
            cmd.append("--stream")
        targets = self.settings.optional_text("targets")
        extra = {TARGETS_ENV: targets} if targets is not None else {}
        # The anthropic SDK appends /v1/messages to its base URL itself, google-genai its API version and method.
        root = ctx.base_url.rstrip("/").removesuffix("/v1")
        if self.protocol == "messages":
            env = {"ANTHROPIC_BASE_URL": root, "ANTHROPIC_API_KEY": ctx.api_key}
        elif self.protocol == "gemini":
            env = {"GOOGLE_GEMINI_BASE_URL": root, "GEMINI_API_KEY": ctx.api_key}
        else:
            env = {"OPENAI_BASE_URL": ctx.base_url, "OPENAI_API_KEY": ctx.api_key}
        return Launch(command=cmd, environment={**env, **extra})

    def version_argv(self) -> tuple[str, ...]:
        # The agent reads its mode here too, so `hostile-version` can make the version probe hang.
        return (*self.version_command, "--mode", self.mode) if self.mode == "hostile-version" else self.version_command

    def normalize(self, native_dir: Path) -> Rollout:
        # The reference agent writes the canonical format itself, so normalizing is reading and validating.
        path = native_dir / Path(_ROLLOUT_DIR).name / "rollout.json"
        if not path.is_file():
            raise NormalizeError(f"the harness wrote no rollout ({path.name} missing in native/)")
        try:
            data = loads_line(path.read_text())
        except ValueError as exc:
            raise NormalizeError(f"{path.name} is not JSON: {exc}") from None
        # Not validated here: a rollout that breaks its format is a finding the schema checks report.
        if not isinstance(data, dict):
            raise NormalizeError("rollout is not an object")
        return cast(Rollout, data)  # what the agent claims to be a rollout: the checks judge it
