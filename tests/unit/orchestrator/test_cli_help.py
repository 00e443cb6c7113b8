"""The CLI tells the truth about itself: an example in every command's help, choices shown, one suggestion."""

from __future__ import annotations

import click
import pytest
import typer.main
from typer.testing import CliRunner

from orchestrator.cli import app


def _leaves(cmd: click.Command | None, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    # As click finds commands (the root loads each command's module when it is asked for it).
    if isinstance(cmd, click.Group):
        ctx = click.Context(cmd)
        return [
            leaf
            for name in sorted(cmd.list_commands(ctx))
            for leaf in _leaves(cmd.get_command(ctx, name), (*path, name))
        ]
    assert cmd is not None
    return [path]


COMMANDS = _leaves(typer.main.get_command(app))


def _help(*path: str) -> str:
    res = CliRunner().invoke(app, [*path, "--help"], terminal_width=200)
    assert res.exit_code == 0, res.output
    return res.output


def test_every_command_is_found() -> None:
    assert ("run",) in COMMANDS and ("results", "publish") in COMMANDS and ("ci", "report") in COMMANDS
    assert len(COMMANDS) >= 17


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_every_commands_help_has_an_example_of_itself(path: tuple[str, ...]) -> None:
    assert f"Example: harness-probe {' '.join(path)}" in _help(*path)


def test_the_root_help_has_an_example_and_count_flags() -> None:
    out = _help()
    assert "Example: harness-probe run" in out
    for flag in ("--verbose", "--quiet"):
        line = next(line for line in out.splitlines() if flag in line)
        assert "INTEGER" not in line and ("-vv" in line or "-qq" in line), line


@pytest.mark.parametrize(
    ("path", "option", "choices"),
    [
        (("run",), "--runtime", "[docker|podman|apptainer]"),
        (("cleanup",), "--runtime", "[docker|podman|apptainer]"),
        (("export",), "--format", "[atif]"),
        (("audit",), "--rollout-format", "[probe|atif]"),
    ],
)
def test_enumerated_options_show_their_choices(path: tuple[str, ...], option: str, choices: str) -> None:
    line = next(line for line in _help(*path).splitlines() if line.lstrip("│ ").startswith(option))
    assert choices in line, line


def test_completion_offers_the_runtimes() -> None:
    cmd = typer.main.get_command(app)
    assert isinstance(cmd, click.Group)
    run = cmd.get_command(click.Context(cmd), "run")
    assert run is not None
    param = next(p for p in run.params if p.name == "runtime")
    ctx = click.Context(run)
    assert [c.value for c in param.shell_complete(ctx, "p")] == ["podman"]


def test_a_typo_is_answered_with_one_suggestion() -> None:
    res = CliRunner().invoke(app, ["rn"])
    assert res.exit_code == 2
    assert res.output.count("Did you mean 'run'?") == 1, res.output
    assert "No such command 'rn'." in res.output
