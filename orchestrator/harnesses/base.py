"""The contract every harness adapter meets: image, launch preset, where its native logs are, normalize()."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from orchestrator.harnesses.options import Option, OptionValues, parse_options
from orchestrator.records import Rollout
from orchestrator.scenarios import Scenario

__all__ = ["Harness", "Launch", "LaunchContext", "NormalizeError", "content_text", "tool_arguments"]


class NormalizeError(RuntimeError):
    """The harness's native logs could not be turned into a rollout (absent, truncated, corrupt): a finding."""


@dataclass(frozen=True)
class LaunchContext:
    """Where things are inside the harness container, the same for every harness."""

    base_url: str = "http://provider:8080/v1"
    api_key: str = "sk-probe-0000000000000000000000000000"
    home: str = "/home/probe"
    workdir: str = "/home/probe/work"
    markers: str = "/probe/markers"
    task_id: str = ""


@dataclass(frozen=True)
class Launch:
    command: list[str]
    environment: dict[str, str] = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)  # absolute paths under HOME -> content


class Harness(ABC):
    """One harness: a small class per module in orchestrator/harnesses/, registered by name."""

    name: ClassVar[str]
    image: ClassVar[str]  # folder under images/, or the name of a plugin's own image
    # A plugin's own image folder (Dockerfile, optional PARENT); None: images/<image> of harness-probe itself.
    image_dir: ClassVar[Path | None] = None
    description: ClassVar[str]
    protocols: ClassVar[tuple[str, ...]] = ("chat",)
    native_paths: ClassVar[tuple[str, ...]] = ()  # container paths copied into native/ untouched
    version_command: ClassVar[tuple[str, ...]] = ()
    # The `-a KEY=VALUE` options, declared once (harnesses/options.py): parsed, checked and shown from this.
    options_declared: ClassVar[tuple[Option, ...]] = ()
    # A harness that ends only through its shell (mini-SWE-agent) names the output prefix that makes a command
    # its submission; the proxy then plays the final answer as one shell call printing PREFIX, newline, ANSWER.
    final_answer_via_shell: ClassVar[str | None] = None
    # The harness container's root filesystem is read-only: these paths (absolute -> size cap) are writable,
    # in memory, and the native paths must lie below one of them. HOME holds the workdir.
    writable_paths: ClassVar[dict[str, str]] = {"/home/probe": "1g", "/tmp": "512m"}
    # The boolean option that switches the harness between JSON and SSE replies, if it has one: `run
    # --compare-stream` plays each scenario a second time with it flipped (transport.parity).
    stream_option: ClassVar[str | None] = None

    def __init__(self, options: dict[str, str] | None = None) -> None:
        # As given (what runtime.json and suite.json record), and typed: BadOption names what a value may be.
        self.options = dict(options or {})
        self.settings: OptionValues = parse_options(self.name, self.options_declared, self.options)

    @abstractmethod
    def launch(self, scenario: Scenario, ctx: LaunchContext) -> Launch:
        """The one-shot, non-interactive command line, its environment and config files for one episode."""

    @abstractmethod
    def normalize(self, native_dir: Path) -> Rollout:
        """native/ -> a probe-rollout/v1 rollout, from what the harness itself reported and nothing else."""

    def harness_profile(self) -> dict[str, Any] | None:
        """What the proxy must know about this harness to play a scenario to it (scenario key `harness_profile`)."""
        if self.final_answer_via_shell is None:
            return None
        return {"final_answer": {"via": "shell", "prefix": self.final_answer_via_shell}}

    def twin(self) -> Harness | None:
        """This harness with its transport switched (JSON <-> SSE), or None when it has one transport only."""
        if self.stream_option is None:
            return None
        flipped = not self.settings.flag(self.stream_option)
        return type(self)({**self.options, self.stream_option: "true" if flipped else "false"})

    def version_argv(self) -> tuple[str, ...]:
        """The command printing the harness's version; run before its episodes, hardened and with a deadline."""
        return self.version_command

    def parse_version(self, output: str) -> str:
        return output.strip().splitlines()[-1] if output.strip() else ""


def content_text(content: Any) -> str | None:
    """A message's or tool output's text as recorded: a string as is, content parts (text, input_text,
    output_text) joined in order; None for anything else."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict)]
        return "".join(t for t in parts if isinstance(t, str))
    return None


def tool_arguments(raw: Any) -> Any:
    """A tool call's arguments as the harness recorded them: a JSON string parsed, anything else (a non-JSON
    string included) kept exactly as it is, so a malformed argument stays visible to the checks."""
    if isinstance(raw, str):
        from orchestrator.harnesses.jsonl import loads_line  # jsonl imports this module

        try:
            return loads_line(raw)
        except (ValueError, RecursionError):  # not JSON, NaN/Infinity, or an integer too long to convert
            return raw
    return raw
