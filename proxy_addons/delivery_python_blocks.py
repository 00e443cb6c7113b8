"""Python-block delivery (SciCode): a scripted step as a reply carrying a fenced python block, run later or never.

SciCode advertises no tools. For each sub-step it sends one fresh prompt (the step's description, the code it kept
from the earlier sub-steps and the next function header) and keeps the first python block of the reply, with its
import lines stripped. It runs nothing while it talks to the model: only its scoring phase, after the last
request, executes each sub-step's accumulated code with `python`. So a scripted tool step becomes a block whose
code writes each call's marker and prints its token (through `__import__`, since SciCode drops import lines),
and gives the process the step's non-zero exit code, if it has one, for when it ends (SciCode runs each sub-step's
code after all earlier sub-steps' code, in one script); no result ever comes back, so none is expected, and the
markers are checked once the harness has stopped. The final answer is a block printing it, after the answer as
text: SciCode keeps only the block.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from proxy_addons.protocol import Codec, IssuedToolCall, ModelRequest, Played
from proxy_addons.scenario import FinalAnswerStep, Step
from proxy_addons.shell_tool import expected_output, marker_path

__all__ = ["DELIVERY", "TOOL_NAME", "PythonBlockDelivery", "python_block_code"]

DELIVERY = "python_blocks"
# The name the witness gives a scripted block; SciCode itself names it only by problem and sub-step.
TOOL_NAME = "python_block"


def python_block_code(markers_dir: str, call_id: str, token: str) -> str:
    """The code for one call: writes the token to the marker and prints it. The token is written in two pieces,
    so the code (which SciCode puts back into the next prompt as earlier code) never shows it whole."""
    prefix, _, rest = token.partition("_")
    piece = f"{prefix + '_'!r} + {rest!r}"
    return (
        f'__import__("os").makedirs({markers_dir!r}, exist_ok=True)\n'
        f"with open({marker_path(markers_dir, call_id)!r}, 'w') as _probe_marker:\n"
        f"    _probe_marker.write({piece})\n"
        f"print({piece})\n"
    )


def _reply(background: str, code: str) -> str:
    # SciCode's prompt asks for the background as a comment at the top of the block.
    return f"```python\n# Background: {background}\n{code}```\n"


class PythonBlockDelivery:
    """Plays steps to SciCode. Stateless: every sub-step is a fresh prompt, and every reply is consumed."""

    name = DELIVERY
    # SciCode never sends what a block printed: the next prompt holds the earlier code, not its output.
    returns_results = False

    def adapt(self, body: Mapping[str, Any], request: ModelRequest, sent: Mapping[str, IssuedToolCall]) -> ModelRequest:
        """The request as the script reads it: the agent loop (it has no tools), with no result to show."""
        return replace(request, has_tools=True, tool_results=())

    def play(self, step: Step, request: ModelRequest, codec: Codec, markers_dir: str) -> Played:
        if isinstance(step, FinalAnswerStep):
            return Played(
                f"{step.answer}\n\n" + _reply("the final answer.", f"print({step.answer!r})\n"), (), step.answer
            )
        calls = tuple(self._call(markers_dir, codec.new_tool_call_id(), spec.exit_code) for spec in step.calls)
        code = "".join(str(c.arguments["code"]) for c in calls)
        failing = [c.exit_code for c in calls if c.exit_code != 0]
        if failing:
            # Not `raise SystemExit`: SciCode runs every later sub-step's code after this block, in one script,
            # which an early exit would cut short. The status is the process's, set for when it ends.
            code += f'__import__("atexit").register(__import__("os")._exit, {failing[-1]})\n'
        return Played(_reply("running the requested commands.", code), calls, None)

    def delivered(self, played: Played) -> None:
        """Nothing to remember: SciCode asks for no confirmation."""

    @staticmethod
    def _call(markers_dir: str, call_id: str, exit_code: int) -> IssuedToolCall:
        token = f"probe_{uuid.uuid4().hex}"
        code = python_block_code(markers_dir, call_id, token)
        return IssuedToolCall(
            call_id=call_id,
            name=TOOL_NAME,
            arguments={"code": code},
            command=code,
            marker_path=marker_path(markers_dir, call_id),
            token=token,
            exit_code=exit_code,
            expected_output=expected_output(token),
        )
