"""Codex CLI 0.169.0 through the whole catalogue: the scenario x check verdict table equals the committed golden.

Regenerate the golden after a deliberate change (see tests/harnesses/golden.py):
    .venv/bin/harness-probe run -H codex -o /tmp/codex-run
    .venv/bin/python -m tests.harnesses.golden codex /tmp/codex-run
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harnesses.golden import assert_matches_golden, results, run_catalogue
from tests.integration.conftest import Images, engine, images

pytestmark = [pytest.mark.docker, pytest.mark.harness]
__all__ = ["engine", "images"]  # fixtures, re-exported so pytest finds them here

HARNESS = "codex"


@pytest.fixture(scope="module")
def run(images: Images, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    out = tmp_path_factory.mktemp(HARNESS) / "out"
    return out, run_catalogue(HARNESS, out)


def test_verdict_table_equals_the_golden(run: tuple[Path, int]) -> None:
    assert_matches_golden(*run, HARNESS)


def test_every_episode_ran_to_the_end_on_its_own(run: tuple[Path, int]) -> None:
    out, _ = run
    for name, r in results(out, HARNESS).items():
        # A terminal model error makes `codex exec` exit 1; everything else ends with 0, never by the timeout.
        assert (r["execution"]["status"], r["execution"]["exit_code"]) == (
            "exited",
            1 if name == "model_error" else 0,
        ), (name, r["execution"])
        runtime = json.loads((out / HARNESS / name / "runtime.json").read_text())
        assert runtime["harness"]["version"] == "codex-cli 0.169.0"
