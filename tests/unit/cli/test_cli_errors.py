"""The error taxonomy at the CLI: every input or execution error is exit 2 with one named line, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from orchestrator import errors
from orchestrator.cli import app

RUN = ["run", "-H", "reference", "-s", "tool_success"]


def _invoke(argv: list[str]) -> tuple[int, str]:
    res = CliRunner().invoke(app, argv)
    assert not isinstance(res.exception, Exception) or isinstance(res.exception, SystemExit), res.exception
    return res.exit_code, res.output


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("/proc/harness-probe-out", "OutputUnwritable: output directory /proc/harness-probe-out cannot be made"),
        ("{tmp}/a-file/out", "OutputUnwritable: output directory {tmp}/a-file/out cannot be made: a parent is not"),
    ],
)
@pytest.mark.parametrize("command", ["run", "audit", "merge"])
def test_an_impossible_output_path_is_an_input_error(tmp_path: Path, where: str, message: str, command: str) -> None:
    (tmp_path / "a-file").write_text("not a directory")
    (tmp_path / "src").mkdir()
    out = where.format(tmp=tmp_path)
    argv = {"run": [*RUN, "-o", out], "audit": ["audit", str(tmp_path / "src"), "-o", out]}.get(
        command, ["merge", str(tmp_path / "src"), "-o", out]
    )
    code, output = _invoke(argv)
    assert code == 2, output
    assert f"harness-probe: {message.format(tmp=tmp_path)}" in output
    assert "internal error" not in output and "Traceback" not in output


def test_an_existing_output_is_named(tmp_path: Path) -> None:
    code, output = _invoke([*RUN, "-o", str(tmp_path)])
    assert code == 2
    assert f"harness-probe: OutputExists: output directory {tmp_path} already exists" in output


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "-H", "nope", "-o", "x"], "UnknownHarness: unknown harness 'nope' (known: "),
        ([*RUN, "-a", "mode=lying", "-o", "x"], "BadOption: harness 'reference': option mode='lying' is not one of"),
        (["run", "-H", "reference", "-s", "no-such", "-o", "x"], "FormatError: no-such is not valid:"),
    ],
)
def test_input_errors_are_named_once(tmp_path: Path, argv: list[str], message: str) -> None:
    code, output = _invoke([a if a != "x" else str(tmp_path / "out") for a in argv])
    assert code == 2
    assert f"harness-probe: {message}" in output
    assert not (tmp_path / "out").exists()


def test_the_tree_in_the_docstring_names_every_class() -> None:
    classes = [c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, errors.HarnessProbeError)]
    assert len(classes) >= 13
    for cls in classes:
        assert cls.__name__ in (errors.__doc__ or ""), cls
        assert issubclass(cls, (errors.InputError, errors.ExecutionError)) or cls in (
            errors.HarnessProbeError,
            errors.InputError,
            errors.ExecutionError,
        )
