"""Native delivery: a step as the harness's own tool calls (its shell tool, or a code tool driven as one), the
final answer as text, as a finish-tool call, or through the shell (`harness_profile.final_answer`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from proxy_addons.delivery_code_tool import FinalTool, final_tool_call, find_code_tool, with_python_outputs
from proxy_addons.issued_calls import final_submit_call, scripted_call
from proxy_addons.protocol import Codec, IssuedToolCall, ModelRequest, Played, Refusal
from proxy_addons.scenario import FinalAnswerStep, Step
from proxy_addons.shell_tool import find_shell_tool

__all__ = ["DELIVERY", "NativeDelivery"]

DELIVERY = "native"


class NativeDelivery:
    """Plays steps as tool calls of the tools a request advertised. Stateless: every reply is one step."""

    name = DELIVERY
    # Each call's result comes back in the next request's history.
    returns_results = True

    def __init__(self, final_tool: FinalTool | None, shell_prefix: str | None) -> None:
        # At most one is set (the scenario's profile): the finish tool, or the prefix of a final answer via shell.
        self._final_tool = final_tool
        self._prefix = shell_prefix

    def adapt(self, body: Mapping[str, Any], request: ModelRequest, sent: Mapping[str, IssuedToolCall]) -> ModelRequest:
        """The request as parsed, with what a Python code tool printed read as its call's result (NOOA)."""
        return with_python_outputs(body, request)

    def play(self, step: Step, request: ModelRequest, codec: Codec, markers_dir: str) -> Played | Refusal:
        names = ", ".join(tool.name for tool in request.tools) or "none"
        if isinstance(step, FinalAnswerStep) and self._final_tool is not None:
            # The finish-tool call runs no command: it is in the reply but never a witnessed `tool_call`.
            finish = final_tool_call(codec, request.tools, self._final_tool, step.answer)
            if finish is None:
                tool = self._final_tool.tool
                return Refusal(
                    "no_finish_tool",
                    f"the script ends through the tool {tool!r}, which was not advertised (tools: {names})",
                )
            return Played(text=None, calls=(), answer=step.answer, wire_calls=(finish,))
        if isinstance(step, FinalAnswerStep) and self._prefix is None:
            return Played(text=step.answer, calls=(), answer=step.answer)
        shell = find_shell_tool(request.tools) or find_code_tool(request.tools)
        if shell is None:
            return Refusal(
                "no_shell_tool", f"the script needs a shell tool call but none usable was advertised (tools: {names})"
            )
        if isinstance(step, FinalAnswerStep):
            # The harness takes its final answer only from a command's output (harness_profile).
            submit = (final_submit_call(codec, shell, self._prefix or "", step.answer, markers_dir),)
            return Played(text=None, calls=submit, answer=step.answer, wire_calls=submit)
        calls = tuple(scripted_call(codec, shell, spec, markers_dir) for spec in step.calls)
        return Played(text=None, calls=calls, answer=None, wire_calls=calls)

    def delivered(self, played: Played) -> None:
        """Nothing to remember: a native harness confirms nothing."""
