"""Where a command writes: an output path that cannot be checked, one inside its own input, a file option that
names a folder or a missing one; and inputs an audit cannot read. Each is one named line and exit 2 (or, for
evidence the audit cannot read, a verdict), never an internal error."""

from __future__ import annotations

import errno
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from orchestrator.cli import app

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "episodes"
RUN = ["run", "-H", "reference", "-s", "tool_success"]


def _invoke(argv: list[str]) -> Result:
    res = CliRunner().invoke(app, argv)
    # A crash reaches CliRunner as the exception itself; a named error is typer.Exit (SystemExit) with code 2.
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    return res


def _source(root: Path, *scenarios: str) -> Path:
    """A bare tree of saved episodes (<harness>/<scenario>/), as an audit reads it."""
    for s in scenarios or ("tool_success", "model_error"):
        shutil.copytree(FIXTURES / s, root / "reference" / s)
    return root


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _deny(monkeypatch: pytest.MonkeyPatch, name: str, *calls: str) -> None:
    """`calls` of os (stat, lstat, open, scandir) raise PermissionError for any path whose last part is `name`, or
    that lies below it: what a mode-000 file or folder gives a user without DAC capabilities. Injected, since a
    test run as root reads everything."""
    for call in calls:
        real: Callable[..., Any] = getattr(os, call)

        def denied(path: Any, *args: Any, _real: Callable[..., Any] = real, **kwargs: Any) -> Any:
            parts = Path(os.fsdecode(path)).parts if isinstance(path, (str, bytes, os.PathLike)) else ()
            if name in parts:
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fsdecode(path))
            return _real(path, *args, **kwargs)

        monkeypatch.setattr(os, call, denied)


def _argv(command: str, src: Path, out: Path | str) -> list[str]:
    return [*RUN, "-o", str(out)] if command == "run" else [command, str(src), "-o", str(out)]


# Defect: Path.exists() raises on Python 3.13 for an error other than "not there"; it was an internal error.
@pytest.mark.parametrize("command", ["run", "audit", "export", "merge"])
def test_an_output_name_too_long_is_named(tmp_path: Path, command: str) -> None:
    src = _source(tmp_path / "src")
    out = tmp_path / ("a" * 300)
    res = _invoke(_argv(command, src, out))
    assert res.exit_code == 2, res.output
    assert f"harness-probe: OutputUnwritable: output directory {out} cannot be made: name too long" in res.output


@pytest.mark.parametrize("command", ["run", "audit", "export", "merge"])
def test_an_output_under_a_folder_that_cannot_be_searched_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    src = _source(tmp_path / "src")
    (tmp_path / "locked").mkdir()
    _deny(monkeypatch, "locked", "stat", "lstat")
    out = tmp_path / "locked" / "x" / "out"
    res = _invoke(_argv(command, src, out))
    assert res.exit_code == 2, res.output
    assert f"OutputUnwritable: output directory {out} cannot be made: permission denied" in res.output


@pytest.mark.parametrize("command", ["audit", "export", "merge"])
@pytest.mark.parametrize(
    ("where", "says"),
    [
        ("src/inside", "is inside the source"),
        ("src/./reference/../", "is the source"),
        (".", "holds the source"),
    ],
)
def test_an_output_in_its_own_source_is_refused_before_anything_is_written(
    tmp_path: Path, command: str, where: str, says: str
) -> None:
    src = _source(tmp_path / "src")
    before = _tree(src)
    out = tmp_path / where
    res = _invoke([command, str(src), "-o", str(out)])
    assert res.exit_code == 2, res.output
    assert f"harness-probe: BadOption: output directory {out} {says}" in res.output
    assert "choose one outside every input" in res.output
    assert not (src / "inside").exists()
    assert _tree(src) == before


def test_merge_refuses_an_output_inside_any_of_its_sources(tmp_path: Path) -> None:
    a, b = _source(tmp_path / "a", "tool_success"), _source(tmp_path / "b", "model_error")
    res = _invoke(["merge", str(a), str(b), "-o", str(b / "merged")])
    assert res.exit_code == 2, res.output
    assert f"is inside the source {b}" in res.output
    assert not (b / "merged").exists()


def test_an_output_beside_the_source_is_still_written(tmp_path: Path) -> None:
    # The negative control of the refusals above: a sibling whose name starts like the source's is outside it.
    src = _source(tmp_path / "src")
    res = _invoke(["audit", str(src), "-o", str(tmp_path / "src-audited")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "src-audited" / "summary.json").is_file()


def test_harness_options_without_a_harness_are_refused(tmp_path: Path) -> None:
    src = _source(tmp_path / "src")
    res = _invoke(["audit", str(src), "-o", str(tmp_path / "out"), "-a", "mode=foo"])
    assert res.exit_code == 2, res.output
    assert "harness-probe: BadOption: -a/--harness-arg sets an option of the harness given with -H/--harness" in (
        res.output
    )
    assert not (tmp_path / "out").exists()


def test_an_audit_of_an_unreadable_rollout_reaches_a_verdict_that_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = _source(tmp_path / "src")
    _deny(monkeypatch, "rollout.json", "open")
    res = _invoke(["-q", "audit", str(src), "-o", str(tmp_path / "out")])
    assert res.exit_code == 1, res.output  # the episode without its rollout fails; the other passes
    saved = json.loads((tmp_path / "out" / "reference" / "tool_success" / "scenario_result.json").read_text())
    assert {"kind": "special", "path": "rollout.json"}.items() <= saved["collection"]["findings"][0].items()
    assert "Permission denied" in saved["collection"]["findings"][0]["reason"]
    audited = json.loads((tmp_path / "out" / "audit.json").read_text())["inputs"]
    assert "reference/tool_success/rollout.json" not in audited  # not read: listed as links are, not at all
    assert "reference/tool_success/witness.jsonl" in audited


def test_an_audit_source_whose_folder_cannot_be_listed_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = _source(tmp_path / "src")
    _deny(monkeypatch, "reference", "scandir")
    for command in ("audit", "export"):
        res = _invoke([command, str(src), "-o", str(tmp_path / command)])
        assert res.exit_code == 2, res.output
        assert f"harness-probe: BadFile: {src / 'reference'}: the folder cannot be listed: Permission denied" in (
            res.output
        )


def test_an_episode_folder_that_cannot_be_read_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = _source(tmp_path / "src")
    _deny(monkeypatch, "tool_success", "lstat", "stat", "open", "scandir")
    res = _invoke(["-q", "audit", str(src), "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output  # the other episode is audited
    assert "skipped reference/tool_success: it cannot be read: Permission denied" in res.output
    shutil.rmtree(src / "reference" / "model_error")
    res = _invoke(["-q", "audit", str(src), "-o", str(tmp_path / "out2")])
    assert res.exit_code == 2, res.output
    assert f"BadFile: {src}: no episodes found that can be read: reference/tool_success: it cannot be read" in (
        res.output
    )


@pytest.fixture
def places(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "emptydir").mkdir()
    (tmp_path / "afile").write_text("a file\n")
    return {"emptydir": str(tmp_path / "emptydir"), "afile": str(tmp_path / "afile"), "tmp": str(tmp_path)}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["ci", "report", "{tmp}", "-o", "{emptydir}"],
            "--output file {emptydir} cannot be written: it is a directory",
        ),
        (
            ["ci", "report", "{tmp}", "--check-json", "{tmp}/no/dir/x.json"],
            "--check-json file {tmp}/no/dir/x.json cannot be written: its folder {tmp}/no/dir does not exist",
        ),
        (["checks", "docs", "-o", "{emptydir}"], "--output file {emptydir} cannot be written: it is a directory"),
        (
            ["checks", "docs", "-o", "{afile}/x.md"],
            "--output file {afile}/x.md cannot be written: {afile} is not a directory",
        ),
        (
            ["images", "export", "proxy", "-o", "{afile}"],
            "output directory {afile} cannot be used: it is not a directory",
        ),
    ],
)
def test_an_output_file_option_naming_a_folder_or_a_missing_one_is_named(
    places: dict[str, str], argv: list[str], message: str
) -> None:
    res = _invoke([a.format(**places) for a in argv])
    assert res.exit_code == 2, res.output
    assert f"harness-probe: OutputUnwritable: {message.format(**places)}" in res.output


def test_ci_select_checks_its_github_output_before_printing(places: dict[str, str]) -> None:
    res = _invoke(["ci", "select", "--all", "--github-output", places["emptydir"]])
    assert res.exit_code == 2, res.output
    assert f"OutputUnwritable: --github-output file {places['emptydir']} cannot be written: it is a directory" in (
        res.output
    )
    assert res.stdout == ""  # no selection printed that CI would act on
    gh = Path(places["tmp"]) / "gh"
    res = _invoke(["ci", "select", "--all", "--github-output", str(gh)])
    assert res.exit_code == 0, res.output
    assert gh.read_text().startswith("harnesses=")
