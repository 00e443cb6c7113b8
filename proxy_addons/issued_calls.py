"""The shell calls the script sends: how each is made (id, token, command, marker), witnessed and then followed."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from proxy_addons.delivery_code_tool import arguments_for
from proxy_addons.protocol import Codec, IssuedToolCall
from proxy_addons.scenario import ToolCallSpec
from proxy_addons.shell_tool import (
    ShellTool,
    build_arguments,
    expected_output,
    final_submit_command,
    final_submit_output,
    marker_path,
    scripted_command,
)


@dataclass
class CallState:
    """What the provider has observed about one tool call it sent (issued, or carried by a cut reply)."""

    call: IssuedToolCall
    attempt_id: str
    last_output: str | None = None
    # (present, matches) of the last marker check, None before the first one.
    marker: tuple[bool, bool] | None = None
    # A summarization request came after the command ran: the model saw the result there (compaction only).
    summarized: bool = False

    @property
    def verified(self) -> bool:
        return self.marker == (True, True)


def scripted_call(codec: Codec, shell: ShellTool, spec: ToolCallSpec, markers_dir: str) -> IssuedToolCall:
    """A step's call: a command that writes a fresh token to its marker and exits with the scripted status."""
    call_id = codec.new_tool_call_id()
    token = f"probe_{uuid.uuid4().hex}"
    command = scripted_command(markers_dir, call_id, token, spec.exit_code)
    return IssuedToolCall(
        call_id=call_id,
        name=shell.name,
        namespace=shell.namespace,
        arguments=arguments_for(shell, command),
        command=command,
        marker_path=marker_path(markers_dir, call_id),
        token=token,
        exit_code=spec.exit_code,
        expected_output=expected_output(token),
    )


def final_submit_call(codec: Codec, shell: ShellTool, prefix: str, answer: str, markers_dir: str) -> IssuedToolCall:
    """The final answer as one command whose output the harness takes as its answer (harness_profile)."""
    call_id = codec.new_tool_call_id()
    token = f"probe_{uuid.uuid4().hex}"
    command = final_submit_command(markers_dir, call_id, token, prefix, answer)
    return IssuedToolCall(
        call_id=call_id,
        name=shell.name,
        namespace=shell.namespace,
        arguments=build_arguments(shell, command),
        command=command,
        marker_path=marker_path(markers_dir, call_id),
        token=token,
        exit_code=0,
        expected_output=final_submit_output(prefix, answer),
        final_submit=True,
    )


def tool_call_fields(attempt_id: str, call: IssuedToolCall) -> dict[str, Any]:
    """The witness's `tool_call` event for a call carried by the attempt's reply."""
    fields: dict[str, Any] = {
        "attempt_id": attempt_id,
        "tool_call_id": call.call_id,
        "name": call.name,
        "arguments": dict(call.arguments),
        "command": call.command,
        "marker_path": call.marker_path,
        "token": call.token,
        "exit_code": call.exit_code,
        "expected_output": call.expected_output,
    }
    if call.namespace is not None:
        fields["namespace"] = call.namespace
    if call.final_submit:
        fields["final_submit"] = True
    return fields
