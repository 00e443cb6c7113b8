"""`results publish/render`: nothing saved is removed before the new run is known to hold what is published, and a
harness name never leads out of docs/results/."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

import orchestrator.cli.results as results_cli
from orchestrator.cli import app
from orchestrator.report import build_summary, summary_bytes
from tests.unit.report.conftest import checks, make_suite, result, write_run


@pytest.fixture
def docs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    docs = tmp_path / "repo" / "docs" / "results"
    (docs / "runs" / "reference").mkdir(parents=True)
    (docs / "runs" / "reference" / "summary.json").write_text('{"saved": "earlier"}')
    monkeypatch.setattr(results_cli, "REPO_ROOT", tmp_path / "repo")
    monkeypatch.setattr(results_cli, "DOCS", docs)
    return docs


def _run(tmp_path: Path) -> Path:
    suite = make_suite(["hermes"], ["tool_success"])
    run = write_run(tmp_path / "run", suite, [result("hermes", "tool_success", "pass", checks())])
    summary = build_summary(run.dir, suite, run.results, False, "2025-01-01T12:00:00.000Z", "2025-01-01T12:30:00.000Z")
    (run.dir / "summary.json").write_bytes(summary_bytes(summary))
    return run.dir


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_run_without_the_harness_leaves_its_saved_results(docs: Path, tmp_path: Path) -> None:
    before = _tree(docs)
    for name in ("reference", "*", "[h]ermes"):  # glob patterns name no harness either
        res = CliRunner().invoke(app, ["results", "publish", str(_run(tmp_path / name)), "-H", name])
        assert res.exit_code == 2
        assert f"the run has no episode of {name!r} (it probed: hermes)" in res.output
        assert _tree(docs) == before


@pytest.mark.parametrize("name", ["..", ".", "../runs", "a/b", ""])
def test_a_harness_name_that_is_not_one_folder_is_refused(docs: Path, tmp_path: Path, name: str) -> None:
    before = _tree(tmp_path / "repo")
    run = _run(tmp_path)
    publish = CliRunner().invoke(app, ["results", "publish", str(run), "-H", name])
    assert publish.exit_code == 2 and "is not a harness name" in publish.output
    render = CliRunner().invoke(app, ["results", "render", name])
    assert render.exit_code == 2 and "is not a harness name" in render.output
    assert _tree(tmp_path / "repo") == before
    assert (docs / "runs" / "reference").is_dir()


def test_render_of_a_harness_with_no_saved_run_names_the_saved_ones(docs: Path) -> None:
    res = CliRunner().invoke(app, ["results", "render", "nope"])
    assert res.exit_code == 2
    assert "no saved run of 'nope'" in res.output and "(saved: reference)" in res.output
    res = CliRunner().invoke(app, ["results", "render", "reference"])  # its summary.json is no summary
    assert res.exit_code == 2 and "the saved run of 'reference' cannot be read" in res.output


def _hermes_saved(docs: Path) -> None:
    (docs / "runs" / "hermes").mkdir(parents=True)
    (docs / "runs" / "hermes" / "summary.json").write_text('{"saved": "earlier"}')


@pytest.mark.parametrize("plant", ["suite.json", "summary.json", "runtime.json", "episode"])
def test_a_linked_file_is_refused_and_nothing_saved_is_lost(docs: Path, tmp_path: Path, plant: str) -> None:
    _hermes_saved(docs)
    run = _run(tmp_path)
    host = tmp_path / "host-secret.json"
    host.write_text('{"secret": "root:x:0:0"}')
    if plant == "episode":
        ep = run / "hermes" / "tool_success"
        ep.rename(tmp_path / "outside-episode")
        ep.symlink_to(tmp_path / "outside-episode", target_is_directory=True)
    else:
        target = run / (f"hermes/tool_success/{plant}" if plant == "runtime.json" else plant)
        real = target.read_bytes()
        target.unlink()
        host.write_bytes(real)  # the same content: only the link is wrong
        target.symlink_to(host)
    before = _tree(docs)
    res = CliRunner().invoke(app, ["results", "publish", str(run), "-H", "hermes"])
    assert res.exit_code == 2, res.output
    assert "links are not followed" in res.output or "without a link" in res.output, res.output
    assert _tree(docs) == before


def test_a_plain_run_is_published(docs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The negative control of the refusals above.
    monkeypatch.setattr(results_cli, "_render", lambda *args: None)
    monkeypatch.setattr(results_cli, "matrix", lambda *args: None)
    _hermes_saved(docs)
    run = _run(tmp_path)
    res = CliRunner().invoke(app, ["results", "publish", str(run), "-H", "hermes"])
    assert res.exit_code == 0, res.output
    assert (docs / "runs" / "hermes" / "summary.json").read_bytes() == (run / "summary.json").read_bytes()
    assert (docs / "runs" / "hermes" / "hermes" / "runtime.json").is_file()


def test_outside_a_checkout_the_results_commands_refuse_unless_given_docs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An installed tool: no checkout, so no docs/results/ of this project to write into.
    monkeypatch.setattr(results_cli, "REPO_ROOT", None)
    monkeypatch.setattr(results_cli, "DOCS", None)
    run = _run(tmp_path)
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    for args in (["publish", str(run), "-H", "hermes"], ["render", "hermes"], ["matrix"]):
        res = CliRunner().invoke(app, ["results", *args])
        assert res.exit_code == 2, res.output
        assert "not run from a harness-probe checkout" in res.output and "--docs DIR" in res.output
    assert list(cwd.iterdir()) == []
    mine = tmp_path / "my-results"
    shipped = Path(__file__).resolve().parents[3] / "docs" / "results" / "runs" / "reference"
    shutil.copytree(shipped, mine / "runs" / "reference")
    for args in (["render", "reference"], ["matrix"]):
        res = CliRunner().invoke(app, ["results", *args, "--docs", str(mine)])
        assert res.exit_code == 0, res.output
    assert (mine / "reference.md").is_file() and (mine / "README.md").is_file()
    assert list(cwd.iterdir()) == []


SHIPPED = Path(__file__).resolve().parents[3] / "docs" / "results" / "runs" / "reference"


@pytest.mark.parametrize("broken", ["summary.json", "reference/runtime.json"])
def test_matrix_names_a_saved_file_that_is_not_json_as_render_does(tmp_path: Path, broken: str) -> None:
    mine = tmp_path / "my-results"
    shutil.copytree(SHIPPED, mine / "runs" / "reference")
    (mine / "runs" / "reference" / broken).write_text("{")
    for args in (["matrix"], ["render", "reference"]):
        res = CliRunner().invoke(app, ["results", *args, "--docs", str(mine)])
        assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
        assert res.exit_code == 2, res.output
        assert "harness-probe: the saved run of 'reference' cannot be read:" in res.output
        assert f"{Path(broken).name}: not JSON" in res.output
    assert not (mine / "README.md").exists() and not (mine / "reference.md").exists()


def test_matrix_refuses_a_docs_folder_without_saved_runs(tmp_path: Path) -> None:
    for docs in (tmp_path / "typo", tmp_path):  # missing, and a folder with no runs/
        res = CliRunner().invoke(app, ["results", "matrix", "--docs", str(docs)])
        assert res.exit_code == 2, res.output
        assert f"harness-probe: {docs} is not a results folder: it has no runs/ folder" in res.output
    assert list(tmp_path.iterdir()) == []
