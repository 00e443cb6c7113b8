"""`results render/matrix` of a hostile saved run: no link followed or written through, a bad file named (exit 2)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from orchestrator.cli import app

SHIPPED = Path(__file__).resolve().parents[3] / "docs" / "results" / "runs" / "reference"


@pytest.fixture
def mine(tmp_path: Path) -> Path:
    mine = tmp_path / "my-results"
    shutil.copytree(SHIPPED, mine / "runs" / "reference")
    (mine / "runs" / "reference" / "audited").unlink(missing_ok=True)
    return mine


def _results(mine: Path, *args: str) -> str:
    res = CliRunner().invoke(app, ["results", *args, "--docs", str(mine)])
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert res.exit_code == 2, res.output
    return res.output


def test_a_linked_audited_file_is_not_read_into_the_page(mine: Path, tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("TOP-SECRET")
    os.symlink(tmp_path / "secret", mine / "runs" / "reference" / "audited")
    out = _results(mine, "render", "reference")
    assert "audited is not valid" in out and "TOP-SECRET" not in out
    assert not (mine / "reference.md").exists()


def test_an_audited_file_not_utf8_is_named(mine: Path) -> None:
    (mine / "runs" / "reference" / "audited").write_bytes(b"\xff\xfe re-checked")
    assert "audited is not valid" in _results(mine, "render", "reference")


def test_a_linked_runtime_folder_gives_no_version(mine: Path, tmp_path: Path) -> None:
    saved = mine / "runs" / "reference"
    shutil.rmtree(saved / "reference")
    (tmp_path / "elsewhere" / "x").mkdir(parents=True)
    (tmp_path / "elsewhere" / "x" / "runtime.json").write_text(json.dumps({"harness": {"version": "LEAKED"}}))
    os.symlink(tmp_path / "elsewhere", saved / "reference")
    out = _results(mine, "render", "reference")
    assert "not a folder reached without a link" in out
    assert not (mine / "reference.md").exists()


@pytest.mark.parametrize(
    ("runtime", "fault"),
    [({"harness": "x"}, "$.harness: is not an object"), ([1], "$: is not an object"), ({"proxy": 3}, "$.proxy")],
)
def test_a_runtime_record_of_the_wrong_shape_is_named(mine: Path, runtime: object, fault: str) -> None:
    (mine / "runs" / "reference" / "reference" / "runtime.json").write_text(json.dumps(runtime))
    out = _results(mine, "render", "reference")
    assert "the saved run of 'reference' cannot be read" in out and fault in out


def test_a_saved_run_under_another_harness_name_is_named(mine: Path) -> None:
    os.rename(mine / "runs" / "reference", mine / "runs" / "codex")
    assert "has no results for 'codex'" in _results(mine, "render", "codex")


def test_a_page_that_is_a_link_is_not_written_through(mine: Path, tmp_path: Path) -> None:
    (tmp_path / "victim").write_text("victim")
    os.symlink(tmp_path / "victim", mine / "reference.md")
    assert "OutputUnwritable" in _results(mine, "render", "reference")
    assert (tmp_path / "victim").read_text() == "victim"


def test_a_matrix_page_that_is_a_folder_is_named(mine: Path) -> None:
    (mine / "README.md").mkdir()
    assert "README.md cannot be written: it is a directory" in _results(mine, "matrix")


@pytest.mark.parametrize(
    "version", ["1.0` [notes](https://evil.example/x) ![](https://evil.example/p.png) @all", "1|2"]
)
def test_a_version_the_image_answered_is_inert_code_on_the_published_page(mine: Path, version: str) -> None:
    runtime = mine / "runs" / "reference" / "reference" / "runtime.json"
    record = json.loads(runtime.read_text())
    record["harness"]["version"] = version
    runtime.write_text(json.dumps(record))
    res = CliRunner().invoke(app, ["results", "render", "reference", "--docs", str(mine)])
    assert res.exit_code == 0, res.output
    [line] = [ln for ln in (mine / "reference.md").read_text().splitlines() if ln.startswith("- harness version:")]
    # No way out of the code span: no live link, image, mention or table cell.
    assert "](" not in line.replace("\\]\\(", "") and "@all" not in line and "|" not in line.replace("\\|", "")
