"""Shell-tool detection, argument building and the scripted marker command."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import run_command

from proxy_addons.shell_tool import (
    DESCRIPTION_TEXT,
    ToolSpec,
    bare_name,
    build_arguments,
    expected_output,
    find_shell_tool,
    marker_path,
    scripted_command,
)


def params(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


@pytest.mark.parametrize(
    ("name", "bare"),
    [
        ("bash", "bash"),
        ("mcp__tools__Bash", "Bash"),
        ("functions.shell", "shell"),
        ("a.b__exec_command", "exec_command"),
        ("x__y.terminal", "terminal"),
    ],
)
def test_bare_name_strips_namespace(name: str, bare: str) -> None:
    assert bare_name(name) == bare


def test_bash_style_command_string() -> None:
    shell = find_shell_tool([ToolSpec("Bash", params({"command": {"type": "string"}}, ["command"]))])
    assert shell is not None
    assert build_arguments(shell, "echo hi") == {"command": "echo hi"}


def test_codex_exec_command_cmd() -> None:
    spec = ToolSpec(
        "exec_command",
        params(
            {"cmd": {"type": "string"}, "workdir": {"type": "string"}, "yield_time_ms": {"type": "number"}},
            ["cmd"],
        ),
    )
    shell = find_shell_tool([spec])
    assert shell is not None
    assert build_arguments(shell, "ls") == {"cmd": "ls"}


def test_argv_array_command_is_wrapped_in_bash_lc() -> None:
    spec = ToolSpec("shell", params({"command": {"type": "array", "items": {"type": "string"}}}, ["command"]))
    shell = find_shell_tool([spec])
    assert shell is not None
    assert build_arguments(shell, "echo hi") == {"command": ["bash", "-lc", "echo hi"]}


def test_cline_run_commands_takes_the_command_as_a_one_item_list() -> None:
    # Cline 3.0.65 advertises run_commands{commands: string[]}: each item is a whole command for its shell, so
    # the argv wrapping would run `bash`, `-lc` and the command as three commands.
    items = {"type": "string", "description": "The non-interactive shell command to execute"}
    spec = ToolSpec("run_commands", params({"commands": {"type": "array", "items": items}}, ["commands"]))
    shell = find_shell_tool([spec])
    assert shell is not None
    assert not shell.argv
    assert shell.command_list
    assert build_arguments(shell, "echo hi && exit 3") == {"commands": ["echo hi && exit 3"]}


def test_an_argv_array_under_another_key_stays_argv() -> None:
    spec = ToolSpec("run_commands", params({"command": {"type": "array", "items": {"type": "string"}}}, ["command"]))
    shell = find_shell_tool([spec])
    assert shell is not None
    assert build_arguments(shell, "ls") == {"command": ["bash", "-lc", "ls"]}


def test_required_description_and_directory_are_filled() -> None:
    spec = ToolSpec(
        "run_shell_command",
        params(
            {
                "command": {"type": "string"},
                "description": {"type": "string"},
                "directory": {"type": "string"},
            },
            ["command", "description", "directory"],
        ),
    )
    shell = find_shell_tool([spec])
    assert shell is not None
    assert build_arguments(shell, "true") == {
        "command": "true",
        "description": DESCRIPTION_TEXT,
        "directory": ".",
    }


def test_required_defaults_enums_and_flags_are_filled() -> None:
    spec = ToolSpec(
        "terminal",
        params(
            {
                "command": {"type": "string"},
                "mode": {"type": "string", "enum": ["fg", "bg"]},
                "timeout": {"type": "integer", "default": 60},
                "background": {"type": "boolean"},
            },
            ["command", "mode", "timeout", "background"],
        ),
    )
    shell = find_shell_tool([spec])
    assert shell is not None
    assert build_arguments(shell, "x") == {"command": "x", "mode": "fg", "timeout": 60, "background": False}


def test_tool_with_unfillable_required_property_is_skipped_for_the_next() -> None:
    unusable = ToolSpec(
        "bash", params({"command": {"type": "string"}, "ticket": {"type": "string"}}, ["command", "ticket"])
    )
    usable = ToolSpec("shell_command", params({"command": {"type": "string"}}, ["command"]))
    shell = find_shell_tool([unusable, usable])
    assert shell is not None and shell.name == "shell_command"


@pytest.mark.parametrize(
    "spec",
    [
        ToolSpec("read_file", params({"command": {"type": "string"}}, ["command"])),
        ToolSpec("bash", params({"script": {"type": "string"}}, ["script"])),
        ToolSpec("bash", {}),
        ToolSpec("bash", params({"command": {"type": "string"}, "n": {"type": "integer"}}, ["command", "n"])),
    ],
)
def test_unusable_tools_are_not_shell_tools(spec: ToolSpec) -> None:
    assert find_shell_tool([spec]) is None


def test_required_command_key_wins_when_both_exist() -> None:
    spec = ToolSpec("shell", params({"cmd": {"type": "string"}, "command": {"type": "string"}}, ["command"]))
    shell = find_shell_tool([spec])
    assert shell is not None and shell.command_key == "command"


@pytest.mark.parametrize("exit_code", [0, 3])
def test_scripted_command_writes_marker_prints_token_and_exits(tmp_path: Path, exit_code: int) -> None:
    markers = str(tmp_path / "mark ers")  # a space proves the path is shell-quoted
    token = "probe_0123abcd"
    command = scripted_command(markers, "call_abc", token, exit_code)
    result = run_command(command)
    assert result.returncode == exit_code
    assert result.stdout == expected_output(token) == f"{token}\n"
    assert Path(marker_path(markers, "call_abc")).read_text() == token


def test_scripted_command_text_shape() -> None:
    assert scripted_command("/probe/markers", "call_1", "probe_t", 0) == (
        "mkdir -p /probe/markers && printf '%s' probe_t > /probe/markers/call_1.txt && printf '%s\\n' probe_t && exit 0"
    )


@pytest.mark.parametrize(
    ("key", "schema", "value"),
    [
        ("timeout", {"type": "integer", "description": "Timeout in seconds"}, 60),
        ("timeout", {"type": "number", "description": "Optional timeout in milliseconds (max 600000)"}, 60_000),
        ("timeout_ms", {"type": "integer"}, 60_000),
        ("timeout", {"type": "integer"}, 60_000),
        ("timeout", {"type": "integer", "maximum": 600}, 600),
        ("yield_time_ms", {"type": "number", "minimum": 100_000}, 100_000),
    ],
)
def test_required_timeouts_are_filled_in_their_unit(key: str, schema: dict[str, Any], value: int) -> None:
    spec = ToolSpec("bash", params({"command": {"type": "string"}, key: schema}, ["command", key]))
    shell = find_shell_tool([spec])
    assert shell is not None
    assert build_arguments(shell, "x") == {"command": "x", key: value}


def test_namespace_is_kept_on_the_shell_tool() -> None:
    spec = ToolSpec("exec_command", params({"cmd": {"type": "string"}}, ["cmd"]), namespace="functions")
    shell = find_shell_tool([spec])
    assert shell is not None and (shell.name, shell.namespace) == ("exec_command", "functions")
