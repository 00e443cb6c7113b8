"""OpenCode 1.18.33 through the whole catalogue: the scenario x check verdict table equals the committed golden.

Regenerate the golden after a deliberate change (see tests/harnesses/golden.py):
    .venv/bin/harness-probe run -H opencode -o /tmp/opencode-run
    .venv/bin/python -m tests.harnesses.golden opencode /tmp/opencode-run
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harnesses.golden import assert_matches_golden, results, run_catalogue
from tests.integration.conftest import Images, engine, images

pytestmark = [pytest.mark.docker, pytest.mark.harness]
__all__ = ["engine", "images"]  # fixtures, re-exported so pytest finds them here

HARNESS = "opencode"


@pytest.fixture(scope="module")
def run(images: Images, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    out = tmp_path_factory.mktemp(HARNESS) / "out"
    return out, run_catalogue(HARNESS, out)


def test_verdict_table_equals_the_golden(run: tuple[Path, int]) -> None:
    assert_matches_golden(*run, HARNESS)


def test_every_episode_ran_to_the_end_on_its_own(run: tuple[Path, int]) -> None:
    out, _ = run
    for name, r in results(out, HARNESS).items():
        assert r["execution"]["status"] == "exited", (name, r["execution"])
        # OpenCode exits 1 after a terminal model error, 0 otherwise (pushed to its context window it summarizes
        # its history, continues from the summary and completes).
        assert r["execution"]["exit_code"] == (1 if name == "model_error" else 0), (
            name,
            r["execution"],
        )
        assert r["normalize"]["status"] == "ok", (name, r["normalize"])
    runtime = json.loads((out / HARNESS / "tool_success" / "runtime.json").read_text())
    assert runtime["harness"]["version"] == "opencode 1.18.33"


def test_the_printed_log_is_complete_and_also_in_harness_log(run: tuple[Path, int]) -> None:
    out, _ = run
    episode = out / HARNESS / "model_error"
    printed = (episode / "native" / ".opencode-probe" / "stderr.log").read_text()
    assert "disposing instance" in printed.splitlines()[-1]
    assert "disposing instance" in (episode / "harness.log").read_text()
