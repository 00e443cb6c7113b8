"""`make probe` installs only what a run needs; the `test` extra comes with `make test` and `make lint` (dry runs)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _dry_run(tmp_path: Path, target: str) -> str:
    # A copy with no .venv: make plans the whole set-up, as on a fresh clone, and -n runs none of it.
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy2(ROOT / name, tmp_path / name)
    done = subprocess.run(
        ["make", "-n", target, "PYTHON=python3"], cwd=tmp_path, capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout


@pytest.mark.skipif(shutil.which("make") is None, reason="GNU make is not installed")
def test_probe_installs_the_runtime_dependencies_only(tmp_path: Path) -> None:
    plan = _dry_run(tmp_path, "probe")
    installs = [line for line in plan.splitlines() if "pip install" in line]
    assert installs, plan
    assert all("'.[test]'" not in line and "[test]" not in line for line in installs), installs
    assert any(line.rstrip().endswith("-e .") for line in installs), installs
    assert "harness-probe run --harness reference" in plan


@pytest.mark.skipif(shutil.which("make") is None, reason="GNU make is not installed")
@pytest.mark.parametrize("target", ["test", "lint", "test-unit", "bench"])
def test_tests_and_lint_add_the_test_extra(tmp_path: Path, target: str) -> None:
    plan = _dry_run(tmp_path, target)
    assert any("pip install" in line and "'.[test]'" in line for line in plan.splitlines()), plan
