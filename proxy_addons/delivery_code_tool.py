"""Delivery through code tools: scripted commands via a harness's code tool, the final answer via its finish tool.

Some harnesses reach the shell only through a code tool rather than a shell tool. Stirrup's `code_exec{cmd}` runs
its argument as a bash command (and answers with `<shell_results>` XML carrying the exit code): it is driven like a
shell tool, with the scripted command itself as the argument. NOOA's `execute_python{code}` runs a Python cell in
which the shell is `await self.shell.run(cmd)`: it gets a cell that runs the scripted command through that API (in
a subshell, since NOOA's shell session is persistent and the command ends with `exit N`) and prints the result's
own repr, `BashOutput(stdout=..., return_code=N)`, so the exit status is in what the cell printed.

NOOA answers each `execute_python` call with a tool message that only says `status: complete` and shows what the
cell printed in a later user message, `PythonOutput(tool_call_id='ID', ..., stdout='''TEXT''')`: for a request
that advertises a Python code tool, TEXT there is that call's result as the model saw it (it wins over the tool
message, being what the model read last).

These harnesses also end only through a tool of their own (Stirrup: `finish{reason, paths}`, NOOA:
`return_result{result: TaskResult}`): when the scenario's `harness_profile` says `final_answer: {via: tool, tool:
NAME, argument: KEY}`, the `final_answer` step is played as one call of that tool carrying the answer in KEY (when
KEY takes an object, in each of that object's required string properties). That call runs no command, so it gets
no marker and no `tool_call` witness event: the attempt records `reply_kind: final_answer` and the answer as for a
text answer, and the call itself is in the recorded response body.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from proxy_addons.chat import message_text
from proxy_addons.protocol import Codec, IssuedToolCall, ModelRequest, ToolResult
from proxy_addons.shell_tool import ShellTool, ToolSpec, bare_name, build_arguments, shell_tool_from_spec

__all__ = [
    "CODE_TOOL_NAMES",
    "PYTHON_TOOL_NAMES",
    "FinalTool",
    "FinalToolError",
    "arguments_for",
    "final_tool_call",
    "find_code_tool",
    "parse_final_tool",
    "python_cell",
    "with_python_outputs",
]

# Code tools whose argument is a bash command, by bare lower-cased name -> the property carrying it.
CODE_TOOL_NAMES: Mapping[str, str] = {"code_exec": "cmd"}
# Code tools whose argument is Python with the shell at `self.shell.run` (NOOA), name -> the property carrying it.
PYTHON_TOOL_NAMES: Mapping[str, str] = {"execute_python": "code"}


# One PythonOutput block: the call id, then the printed text between the first triple quotes after `stdout=`.
_PYTHON_OUTPUT = re.compile(
    r"PythonOutput\(tool_call_id='([^'\n]{1,200})'(?:(?!PythonOutput\().)*?\bstdout='{3}(.*?)'{3}", re.DOTALL
)


class FinalToolError(ValueError):
    """A `harness_profile.final_answer` of kind `tool` that is not well formed."""


@dataclass(frozen=True)
class FinalTool:
    """The harness ends through this tool; the answer goes in `argument`."""

    tool: str
    argument: str


def parse_final_tool(final: Mapping[str, Any]) -> FinalTool:
    """`{via: tool, tool: NAME, argument: KEY}` -> FinalTool; FinalToolError for anything else."""
    if set(final) != {"via", "tool", "argument"} or final.get("via") != "tool":
        raise FinalToolError("harness_profile.final_answer must be exactly {via: tool, tool: ..., argument: ...}")
    tool, argument = final["tool"], final["argument"]
    if not isinstance(tool, str) or not tool or not isinstance(argument, str) or not argument:
        raise FinalToolError("harness_profile.final_answer.tool and .argument must be non-empty strings")
    return FinalTool(tool=tool, argument=argument)


def find_code_tool(tools: tuple[ToolSpec, ...] | list[ToolSpec]) -> ShellTool | None:
    """The first advertised code tool that takes its code in its known property, driven as a shell tool."""
    for tool in tools:
        name = bare_name(tool.name).lower()
        key = CODE_TOOL_NAMES.get(name)
        if key is not None:
            shell = shell_tool_from_spec(tool)
            if shell is not None and shell.command_key == key and not shell.argv:
                return shell
            continue
        key = PYTHON_TOOL_NAMES.get(name)
        properties = tool.parameters.get("properties")
        if key is not None and isinstance(properties, Mapping) and "string" in _types(properties.get(key)):
            required = tool.parameters.get("required")
            # Any other required property is one we cannot fill.
            if not isinstance(required, list) or set(required) <= {key}:
                return ShellTool(name=tool.name, command_key=key, argv=False, namespace=tool.namespace)
    return None


def arguments_for(shell: ShellTool, command: str) -> dict[str, Any]:
    """The arguments running `command` through `shell`: a Python cell for a Python code tool, else the command."""
    if bare_name(shell.name).lower() in PYTHON_TOOL_NAMES:
        return {shell.command_key: python_cell(command), **shell.extra}
    return build_arguments(shell, command)


def with_python_outputs(body: Mapping[str, Any], request: ModelRequest) -> ModelRequest:
    """The request with each PythonOutput a user message carries read as its call's result (Python code tools
    only; any other request is returned as it is)."""
    if not any(bare_name(t.name).lower() in PYTHON_TOOL_NAMES for t in request.tools):
        return request
    messages = body.get("messages")
    found: list[ToolResult] = []
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, Mapping) or message.get("role") != "user":
            continue
        content = message_text(message.get("content"))
        if "PythonOutput(" in content:
            found += [ToolResult(call_id=m.group(1), output=m.group(2)) for m in _PYTHON_OUTPUT.finditer(content)]
    return replace(request, tool_results=request.tool_results + tuple(found)) if found else request


def python_cell(command: str) -> str:
    """A NOOA cell running `command` in a subshell of the agent's persistent shell and printing the result's repr."""
    return f"print(repr(await self.shell.run({'(' + command + ')'!r})))"


def final_tool_call(codec: Codec, tools: tuple[ToolSpec, ...], final: FinalTool, answer: str) -> IssuedToolCall | None:
    """One call of the harness's finish tool carrying `answer`, or None when the request did not advertise it."""
    spec = next((t for t in tools if t.name == final.tool), None)
    if spec is None:
        return None
    arguments = _finish_arguments(spec, final.argument, answer)
    if arguments is None:
        return None
    # No command runs: the call carries no marker, token or output of its own.
    return IssuedToolCall(
        call_id=codec.new_tool_call_id(),
        name=spec.name,
        namespace=spec.namespace,
        arguments=arguments,
        command="",
        marker_path="",
        token="",
        exit_code=0,
        expected_output="",
    )


def _finish_arguments(spec: ToolSpec, key: str, answer: str) -> dict[str, Any] | None:
    properties = spec.parameters.get("properties")
    if not isinstance(properties, Mapping) or key not in properties:
        return None
    value: Any = answer
    if "object" in _types(properties[key]):
        # A structured result (NOOA's return_result{result: TaskResult}): each of its required texts carries the
        # answer, since the script's answer is the only text there is.
        value = _answer_object(properties[key], answer)
        if value is None:
            return None
    required_raw = spec.parameters.get("required")
    required = [r for r in required_raw if isinstance(r, str)] if isinstance(required_raw, list) else []
    arguments: dict[str, Any] = {key: value}
    for other in required:
        if other == key:
            continue
        schema = properties.get(other)
        types = _types(schema)
        # The finish tools we drive take lists of created files (Stirrup `paths`): the probe created none.
        if "array" in types:
            arguments[other] = []
        elif isinstance(schema, Mapping) and "default" in schema:
            arguments[other] = schema["default"]
        else:
            return None
    return arguments


def _answer_object(schema: Any, answer: str) -> dict[str, Any] | None:
    """The object whose required string properties all hold `answer`; None when one of them is not a string."""
    properties = schema.get("properties")
    required = schema.get("required")
    if not isinstance(properties, Mapping) or not isinstance(required, list) or not required:
        return None
    value: dict[str, Any] = {}
    for name in required:
        if not isinstance(name, str) or "string" not in _types(properties.get(name)):
            return None
        value[name] = answer
    return value


def _types(schema: object) -> set[str]:
    if not isinstance(schema, Mapping):
        return set()
    declared = schema.get("type")
    if isinstance(declared, str):
        return {declared}
    if isinstance(declared, list):
        return {t for t in declared if isinstance(t, str)}
    return set()
