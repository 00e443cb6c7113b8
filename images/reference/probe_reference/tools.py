"""The one tool this agent offers, `bash`, and how a requested call is really executed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from contextlib import suppress
from dataclasses import dataclass

from probe_reference.rollout import ToolStatus

TOOL_NAME = "bash"
COMMAND_TIMEOUT_S = 120.0

# The same tool in every protocol (each wraps it in its own shape: chat.py, responses.py, messages.py).
BASH_DESCRIPTION = "Run a shell command with `bash -c` and return its combined stdout and stderr."
BASH_PARAMETERS: dict[str, object] = {
    "type": "object",
    "properties": {"command": {"type": "string"}},
    "required": ["command"],
}


@dataclass(frozen=True)
class ToolResult:
    """What running one tool call produced; `output` is exactly the text returned to the model."""

    output: str
    exit_code: int | None
    status: ToolStatus


def parse_arguments(raw: str) -> object:
    """The arguments as JSON when they are JSON, else the raw string (recorded as the model sent it)."""
    try:
        parsed: object = json.loads(raw)
    except ValueError:
        return raw
    return parsed


def execute(tool_name: str, raw_arguments: str, *, timeout_s: float = COMMAND_TIMEOUT_S) -> ToolResult:
    """Run a requested call; calls that cannot run get an error text for the model and status `failed`."""
    if tool_name != TOOL_NAME:
        message = f"error: unknown tool {tool_name!r}; the only tool is {TOOL_NAME!r}"
        return ToolResult(message, None, "failed")
    arguments = parse_arguments(raw_arguments)
    command = arguments.get("command") if isinstance(arguments, dict) else None
    if not isinstance(command, str):
        return ToolResult('error: arguments must be a JSON object {"command": "<string>"}', None, "failed")
    return run_bash(command, timeout_s=timeout_s)


def run_bash(command: str, *, timeout_s: float = COMMAND_TIMEOUT_S) -> ToolResult:
    """Run `bash -c command` with stdout and stderr merged in arrival order, as a terminal would show them."""
    # A new session gives the command its own process group, so a timeout or Ctrl-C can kill all of it.
    proc = subprocess.Popen(
        ["bash", "-c", command],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        try:
            raw, _ = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            raw, _ = proc.communicate()
            output = raw.decode("utf-8", errors="replace")
            output += f"\n[probe-reference: command timed out after {timeout_s:g} s and was killed]"
            return ToolResult(output, None, "failed")
    finally:
        if proc.poll() is None:
            _kill_group(proc)
            proc.wait()
    exit_code = proc.returncode
    status: ToolStatus = "succeeded" if exit_code == 0 else "failed"
    return ToolResult(raw.decode("utf-8", errors="replace"), exit_code, status)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with suppress(ProcessLookupError):  # already gone
        os.killpg(proc.pid, signal.SIGKILL)
