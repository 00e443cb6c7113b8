"""Keystroke-JSON delivery (Terminus 2): a scripted step as commands typed into a terminal, the screen as their result.

Terminus advertises no tools. It reads each reply as JSON `{analysis, plan, commands: [{keystrokes, duration}],
task_complete}`, types every command into one tmux pane, and sends the pane's new text as the next user message.
So a scripted tool step becomes one command per call (each writing its marker and printing its token), the user
message after the reply that carried a call is what the model saw of it (witnessed as its `tool_result_seen`,
shared by every call of that reply), and the final answer is `task_complete: true` twice: Terminus asks once
"Are you sure?" and ends on the second.
"""

from __future__ import annotations

import json
import shlex
import uuid
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from proxy_addons.protocol import Codec, IssuedToolCall, ModelRequest, Played, ToolResult
from proxy_addons.scenario import FinalAnswerStep, Step
from proxy_addons.shell_tool import expected_output, marker_path

__all__ = ["DELIVERY", "TOOL_NAME", "KeystrokeDelivery", "keystroke_command"]

DELIVERY = "keystrokes"
# The name Terminus gives a parsed command in its trajectory; the witness uses it for the same thing.
TOOL_NAME = "bash_command"
# Seconds Terminus waits after typing a command before it reads the screen (its `duration`).
DURATION = 1.0


def keystroke_command(markers_dir: str, call_id: str, token: str, exit_code: int) -> str:
    """The command typed for one call: writes the token to the marker, prints it, leaves `$?` at the exit code.

    The token is typed in two pieces, so the echo of the typed line on the screen never shows it whole: only
    the command's own output does. `(exit N)` sets the status without ending the pane's shell, which `exit N`
    would (Terminus then stops: the session is gone).
    """
    q = shlex.quote
    prefix, _, rest = token.partition("_")
    piece = f"{q(prefix + '_')} {q(rest)}"
    return (
        f"mkdir -p {q(markers_dir)} && printf '%s%s' {piece} > {q(marker_path(markers_dir, call_id))}"
        f" && printf '%s%s\\n' {piece}; (exit {int(exit_code)})"
    )


class KeystrokeDelivery:
    """Plays steps to Terminus 2; holds whether the final answer still awaits its confirmation."""

    name = DELIVERY
    # The screen after each reply is sent back: every call's result is expected in the next request.
    returns_results = True

    def __init__(self) -> None:
        self._asked_to_confirm = False

    def adapt(self, body: Mapping[str, Any], request: ModelRequest, sent: Mapping[str, IssuedToolCall]) -> ModelRequest:
        """The request as the script reads it: the agent loop (it has no tools), with each call's screen as result."""
        messages = body.get("messages")
        results: list[ToolResult] = []
        if isinstance(messages, list):
            for i, message in enumerate(messages):
                content = _text(message, "assistant")
                if content is None or i + 1 >= len(messages):
                    continue
                screen = _text(messages[i + 1], "user")
                if screen is None:
                    continue
                # A call is recognised by its marker path, which only the reply carrying it typed.
                results += [ToolResult(cid, screen) for cid, call in sent.items() if call.marker_path in content]
        return replace(request, has_tools=True, tool_results=tuple(results))

    def play(self, step: Step, request: ModelRequest, codec: Codec, markers_dir: str) -> Played:
        # The first `task_complete` does not consume the step: Terminus asks for a confirmation, so it is played again.
        if isinstance(step, FinalAnswerStep):
            reply = {"analysis": step.answer, "plan": "", "commands": [], "task_complete": True}
            return Played(_json(reply), (), step.answer, consumes_step=self._asked_to_confirm)
        calls = tuple(self._call(markers_dir, codec.new_tool_call_id(), spec.exit_code) for spec in step.calls)
        reply = {
            "analysis": "Running the requested commands.",
            "plan": "Run each command once.",
            "commands": [{"keystrokes": c.arguments["keystrokes"], "duration": DURATION} for c in calls],
            "task_complete": False,
        }
        return Played(_json(reply), calls, None)

    def delivered(self, played: Played) -> None:
        """A reply reached the harness whole (a cut one does not count): a first `task_complete` now awaits its
        confirmation."""
        if played.answer is not None:
            self._asked_to_confirm = True

    @staticmethod
    def _call(markers_dir: str, call_id: str, exit_code: int) -> IssuedToolCall:
        token = f"probe_{uuid.uuid4().hex}"
        command = keystroke_command(markers_dir, call_id, token, exit_code)
        return IssuedToolCall(
            call_id=call_id,
            name=TOOL_NAME,
            arguments={"keystrokes": command + "\n", "duration": DURATION},
            command=command,
            marker_path=marker_path(markers_dir, call_id),
            token=token,
            exit_code=exit_code,
            expected_output=expected_output(token),
        )


def _text(message: Any, role: str) -> str | None:
    if not isinstance(message, Mapping) or message.get("role") != role:
        return None
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: their text, in order
        return "".join(p.get("text", "") for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str))
    return None


def _json(reply: Mapping[str, Any]) -> str:
    return json.dumps(reply, ensure_ascii=False)
