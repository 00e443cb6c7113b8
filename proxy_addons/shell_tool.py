"""Shell-tool detection, argument building and the scripted marker command, over neutral tool specs."""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# Bare names (namespace stripped, lower-cased) under which harnesses advertise their shell tool (OpenClaw: `exec`).
SHELL_TOOL_NAMES = frozenset(
    {"bash", "terminal", "shell", "shell_command", "exec", "exec_command", "run_shell_command"}
)
# Properties that can carry the command, in order of preference when a tool has several.
COMMAND_KEYS = ("cmd", "command")
DESCRIPTION_TEXT = "Run the probe's shell check"

# Required string properties we know how to fill with a harmless value. Anything else required and
# unknown makes the tool unusable: guessing could make the harness reject or misroute the call.
_DESCRIPTION_LIKE = frozenset({"description", "title", "reason", "justification", "explanation", "summary", "purpose"})
_DIRECTORY_LIKE = frozenset({"workdir", "cwd", "working_directory", "directory", "dir", "path"})
_SHELL_LIKE = frozenset({"shell"})
# Timeouts come in seconds (Hermes, pi) or milliseconds (OpenCode, Claude Code, Codex `*_ms`). A required
# one is filled with a minute in its unit; when the unit cannot be told, the millisecond value is used,
# because read as seconds it is merely long, while a seconds value read as milliseconds kills the command.
TIMEOUT_SECONDS = 60
TIMEOUT_MILLISECONDS = 60_000


@dataclass(frozen=True)
class ToolSpec:
    """A tool as a request advertised it: name as sent and its JSON Schema parameters."""

    name: str
    parameters: Mapping[str, Any]
    # Set for a tool nested in a Responses `namespace` tool: calls must name the namespace again.
    namespace: str | None = None


@dataclass(frozen=True)
class ShellTool:
    """A usable shell tool and how to phrase a command for it."""

    name: str
    command_key: str
    # True when the command property is an argv array (Codex `shell`): we wrap in `bash -lc`.
    argv: bool
    # Other required properties and the values we fill them with.
    extra: Mapping[str, Any] = field(default_factory=dict)
    namespace: str | None = None


def bare_name(name: str) -> str:
    """Strip a namespace prefix (up to the last `__` or `.`), e.g. `mcp__tools__bash` -> `bash`."""
    cut = max(
        name.rfind("__") + 2 if "__" in name else 0,
        name.rfind(".") + 1 if "." in name else 0,
    )
    return name[cut:]


def find_shell_tool(tools: list[ToolSpec] | tuple[ToolSpec, ...]) -> ShellTool | None:
    """Return the first advertised tool we can drive as a shell, or None."""
    for tool in tools:
        if bare_name(tool.name).lower() not in SHELL_TOOL_NAMES:
            continue
        shell = shell_tool_from_spec(tool)
        if shell is not None:
            return shell
    return None


def shell_tool_from_spec(tool: ToolSpec) -> ShellTool | None:
    """Work out how to call `tool` with a command, or None when its parameters cannot take one."""
    properties = tool.parameters.get("properties")
    if not isinstance(properties, Mapping):
        return None
    required_raw = tool.parameters.get("required")
    required = [r for r in required_raw if isinstance(r, str)] if isinstance(required_raw, list) else []
    present = [key for key in COMMAND_KEYS if key in properties]
    if not present:
        return None
    # A required command property is the one the harness actually reads.
    command_key = next((key for key in present if key in required), present[0])
    command_schema = properties.get(command_key)
    argv = _schema_allows(command_schema, "array") and not _schema_allows(command_schema, "string")
    extra: dict[str, Any] = {}
    for key in required:
        if key == command_key:
            continue
        value = _fill_required(key, properties.get(key))
        if value is _IMPOSSIBLE:
            return None
        extra[key] = value
    return ShellTool(name=tool.name, command_key=command_key, argv=argv, extra=extra, namespace=tool.namespace)


def build_arguments(shell: ShellTool, command: str) -> dict[str, Any]:
    """The arguments object for one call of `shell` running `command`."""
    arguments: dict[str, Any] = {shell.command_key: ["bash", "-lc", command] if shell.argv else command}
    arguments.update(shell.extra)
    return arguments


def marker_path(markers_dir: str, call_id: str) -> str:
    """Where the scripted command for `call_id` writes its token."""
    return posixpath.join(markers_dir, f"{call_id}.txt")


def scripted_command(markers_dir: str, call_id: str, token: str, exit_code: int) -> str:
    """The command proving execution: writes the token to the marker, prints it, exits with the code."""
    q = shlex.quote
    marker = marker_path(markers_dir, call_id)
    # The printf formats are constants, quoted literally so the command reads the same in every log.
    return (
        f"mkdir -p {q(markers_dir)} && printf '%s' {q(token)} > {q(marker)}"
        f" && printf '%s\\n' {q(token)} && exit {int(exit_code)}"
    )


def expected_output(token: str) -> str:
    """What the scripted command prints on stdout."""
    return f"{token}\n"


def final_submit_command(markers_dir: str, call_id: str, token: str, prefix: str, answer: str) -> str:
    """The command delivering a final answer through the shell: writes the marker silently (so the output
    starts with the prefix line the harness looks for), then prints the prefix, a newline and the answer."""
    q = shlex.quote
    marker = marker_path(markers_dir, call_id)
    # No trailing newline: a harness taking "everything after the prefix line" then submits exactly the answer.
    return (
        f"mkdir -p {q(markers_dir)} && printf '%s' {q(token)} > {q(marker)} && printf '%s\\n%s' {q(prefix)} {q(answer)}"
    )


def final_submit_output(prefix: str, answer: str) -> str:
    """What the final-submit command prints on stdout."""
    return f"{prefix}\n{answer}"


class _Impossible:
    """Sentinel: a required property we cannot fill."""


_IMPOSSIBLE = _Impossible()


def _schema_types(schema: object) -> set[str]:
    if not isinstance(schema, Mapping):
        return set()
    declared = schema.get("type")
    if isinstance(declared, str):
        return {declared}
    if isinstance(declared, list):
        return {t for t in declared if isinstance(t, str)}
    types: set[str] = set()
    # Schemas generated from unions (zod, pydantic) put the alternatives under anyOf/oneOf.
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list):
            for option in options:
                types |= _schema_types(option)
    return types


def _schema_allows(schema: object, type_name: str) -> bool:
    return type_name in _schema_types(schema)


def _fill_required(key: str, schema: object) -> object:
    """A sensible value for a required non-command property, or `_IMPOSSIBLE`."""
    if isinstance(schema, Mapping):
        if "default" in schema:
            return schema["default"]
        if "const" in schema:
            return schema["const"]
        enum = schema.get("enum")
        if isinstance(enum, list) and enum:
            return enum[0]
    types = _schema_types(schema)
    lowered = key.lower()
    if not types or "string" in types:
        if lowered in _DESCRIPTION_LIKE:
            return DESCRIPTION_TEXT
        if lowered in _DIRECTORY_LIKE:
            return "."
        if lowered in _SHELL_LIKE:
            return "bash"
        return _IMPOSSIBLE
    if "boolean" in types:
        # Flags such as `run_in_background` are safest off: the probe needs the command to finish.
        return False
    if types & {"integer", "number"} and ("timeout" in lowered or lowered.startswith("yield_time")):
        return _timeout_value(lowered, schema)
    return _IMPOSSIBLE


def _timeout_value(key: str, schema: object) -> object:
    """A one-minute timeout in the property's unit, kept inside the schema's bounds."""
    described = schema.get("description", "") if isinstance(schema, Mapping) else ""
    text = f"{key} {described if isinstance(described, str) else ''}".lower()
    if key.endswith("_ms") or "millisecond" in text:
        value: float = TIMEOUT_MILLISECONDS
    elif key.endswith(("_s", "_sec", "_secs", "_seconds")) or "second" in text:
        value = TIMEOUT_SECONDS
    else:
        value = TIMEOUT_MILLISECONDS
    if isinstance(schema, Mapping):
        maximum = schema.get("maximum")
        minimum = schema.get("minimum")
        if isinstance(maximum, int | float) and not isinstance(maximum, bool):
            value = min(value, maximum)
        if isinstance(minimum, int | float) and not isinstance(minimum, bool):
            value = max(value, minimum)
    return int(value) if float(value).is_integer() else value
