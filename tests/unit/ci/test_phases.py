"""tests/phases.py: which goldens a CI run runs (never fewer than the changes select), and how it says so."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from orchestrator.harnesses import HARNESSES, IMAGE_FROM_OPTIONS
from tests import phases

ALL = sorted(set(HARNESSES) - IMAGE_FROM_OPTIONS)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository of two commits (README, then an image file of pi), the driver pointed at it."""
    r = tmp_path / "repo"
    (r / "images" / "pi").mkdir(parents=True)
    (r / ".ci").mkdir()
    _git(tmp_path, "init", "-q", "-b", "main", str(r))
    _git(r, "config", "user.email", "t@example.invalid")
    _git(r, "config", "user.name", "t")
    (r / "README.md").write_text("x\n")
    _git(r, "add", "-A")
    _git(r, "commit", "-q", "-m", "one")
    monkeypatch.setattr(phases, "ROOT", r)
    monkeypatch.setattr(phases, "LAST_LANDED", r / ".ci" / "last-landed")
    return r


def _commit(repo: Path, path: str, text: str = "y\n") -> str:
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    (repo / path).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", path)
    return _git(repo, "rev-parse", "HEAD")


def _record(repo: Path, text: str) -> None:
    (repo / ".ci").mkdir(exist_ok=True)
    (repo / ".ci" / "last-landed").write_text(text)


def test_no_record_runs_every_golden(repo: Path) -> None:
    sel, why = phases.choose("auto", None)
    assert sel.harnesses == ALL and sel.all
    assert ".ci/last-landed is absent" in why


def test_a_record_this_clone_lacks_or_off_the_history_runs_every_golden(repo: Path) -> None:
    _record(repo, "0" * 40 + "\n")
    sel, why = phases.choose("auto", None)
    assert sel.harnesses == ALL and "which this clone does not have" in why
    # A commit on another branch: not an ancestor of HEAD, so the diff would not be "what this submission adds".
    base = _git(repo, "rev-parse", "HEAD")
    _git(repo, "checkout", "-q", "-b", "side")
    side = _commit(repo, "images/pi/x")
    _git(repo, "checkout", "-q", "main")
    _commit(repo, "docs/a.md")
    _record(repo, side + "\n")
    sel, why = phases.choose("auto", None)
    assert sel.harnesses == ALL and "not an ancestor of HEAD" in why
    _record(repo, base + "\n")
    assert phases.choose("auto", None)[0].harnesses == []


def test_changes_since_the_record_select_their_harnesses_and_shared_code_all(repo: Path) -> None:
    base = _git(repo, "rev-parse", "HEAD")
    _record(repo, base + "\n")
    # This commit holds the record too: committing it moves no verdict.
    _commit(repo, "images/pi/package-lock.json")
    sel, _ = phases.choose("auto", None)
    assert sel.harnesses == ["pi"] and sel.reasons[".ci/last-landed"].endswith("selects none")
    # Uncommitted and untracked files count: a local run never skips what the tree changed.
    (repo / "orchestrator" / "harnesses" / "hermes").mkdir(parents=True)
    (repo / "orchestrator" / "harnesses" / "hermes" / "rollout.py").write_text("")
    assert phases.choose("auto", None)[0].harnesses == ["hermes", "pi"]
    (repo / "orchestrator" / "checks").mkdir(parents=True)
    (repo / "orchestrator" / "checks" / "tools.py").write_text("")
    sel, _ = phases.choose("auto", None)
    assert sel.harnesses == ALL and sel.reasons["orchestrator/checks/tools.py"] == "the checks: selects all"


def test_forced_modes_and_an_explicit_base(repo: Path) -> None:
    base = _git(repo, "rev-parse", "HEAD")
    _commit(repo, "images/pi/Dockerfile")
    assert phases.choose("all", None)[0].harnesses == ALL
    assert phases.choose("none", None)[0].harnesses == []
    assert phases.choose("auto", base)[0].harnesses == ["pi"]
    assert phases.choose("auto", "no-such-ref")[0].harnesses == ALL


def test_record_landed_only_on_a_clean_tree(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "stray.py").write_text("")
    phases.record_landed()
    assert not (repo / ".ci" / "last-landed").exists()
    assert "not written" in capsys.readouterr().out
    (repo / "stray.py").unlink()
    phases.record_landed()
    assert (repo / ".ci" / "last-landed").read_text().strip() == _git(repo, "rev-parse", "HEAD")


def test_every_harness_but_the_reference_has_a_golden_and_no_file_is_unowned() -> None:
    files = phases.golden_files()
    assert files[""] == [], "a test file in tests/harnesses that names no harness"
    assert sorted(h for h in HARNESSES if not files[h]) == sorted({"reference", *IMAGE_FROM_OPTIONS})
    assert files["pi"][0] == "tests/harnesses/test_golden.py::test_verdict_table_equals_the_golden[pi]"
    assert "tests/harnesses/test_codex_podman.py" in files["codex"]
    assert all(f.startswith("tests/harnesses/test_golden.py::") for f in files["pi"])


def test_the_golden_ids_are_the_ones_pytest_collects() -> None:
    ids = [i for h in ALL for i in phases.golden_files()[h] if "::" in i]
    cmd = [
        str(phases.BIN / "pytest"),
        "--collect-only",
        "-q",
        "-p",
        "no:cacheprovider",
        "tests/harnesses/test_golden.py",
    ]
    res = subprocess.run(cmd, cwd=phases.ROOT, capture_output=True, text=True, timeout=300, check=False)
    collected = {ln.strip() for ln in res.stdout.splitlines() if "::" in ln}
    assert ids and set(ids) == collected, res.stdout[-2000:]


def test_the_budget_projects_goldens_by_harnesses_and_scenarios() -> None:
    from tests.bench.ci_budget import GROWTH, project

    record = {
        "phases": [
            {"name": "lint", "seconds": 30.0, "code": 0},
            {"name": "integration", "seconds": 120.0, "code": 0},
            {"name": "golden a", "seconds": 100.0, "code": 0},
            {"name": "golden b", "seconds": 140.0, "code": 0},
        ]
    }
    (_, now), (_, every), (_, one) = project(record)
    assert now == 390
    # Today's growth: none still to come, so a record of two goldens is scaled to every harness (17), and one
    # harness's golden costs its average.
    assert every == pytest.approx(150 + 120 * 17)
    assert one == pytest.approx(150 + 120)
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(GROWTH, "harnesses", (10, 17))
        mp.setitem(GROWTH, "scenarios", (12, 20))
        (_, now), (_, every), (_, one) = project(record)
        grown_rest = 30 + 120 * 20 / 12
        assert every == pytest.approx(grown_rest + 120 * 10 * 17 / 10 * 20 / 12)
        assert one == pytest.approx(grown_rest + 120 * 20 / 12)


def test_the_closing_count_sums_every_phase_and_an_unreadable_file_is_a_failure(tmp_path: Path) -> None:
    (tmp_path / "phase-01.xml").write_text(
        '<testsuites><testsuite tests="5" failures="1" errors="1" skipped="1"/></testsuites>'
    )
    (tmp_path / "phase-02.xml").write_text('<testsuite tests="3" failures="0" errors="0" skipped="0"/>')
    (tmp_path / "phase-03.xml").write_text("not xml")
    assert phases.junit_counts(sorted(tmp_path.glob("phase-*.xml"))) == (5, 3, 1)


def test_what_ci_probes_is_every_harness_with_an_image_folder() -> None:
    # The images phase builds `proxy reference <selected>`: a harness whose image is a run's option (-H atif)
    # has no folder, and asking for it made the phase exit 2 (a red run with every test green).
    root = Path(__file__).resolve().parents[3]
    assert phases.probed() == ALL and "atif" not in ALL
    assert all((root / "images" / h).is_dir() for h in ALL), [h for h in ALL if not (root / "images" / h).is_dir()]
