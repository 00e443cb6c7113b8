"""Pi 0.73.1 through the whole catalogue: the scenario x check verdict table equals the committed golden.

Regenerate the golden after a deliberate change (see tests/harnesses/golden.py):
    .venv/bin/harness-probe run -H pi -o /tmp/pi-run
    .venv/bin/python -m tests.harnesses.golden pi /tmp/pi-run
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harnesses.golden import assert_matches_golden, results, run_catalogue
from tests.integration.conftest import Images, engine, images

pytestmark = [pytest.mark.docker, pytest.mark.harness]
__all__ = ["engine", "images"]  # fixtures, re-exported so pytest finds them here

HARNESS = "pi"


@pytest.fixture(scope="module")
def run(images: Images, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    out = tmp_path_factory.mktemp(HARNESS) / "out"
    # Pi waits on a silent stream forever: the harness_deadline scenario's own 120 s bound ends that episode.
    return out, run_catalogue(HARNESS, out)


def test_verdict_table_equals_the_golden(run: tuple[Path, int]) -> None:
    assert_matches_golden(*run, HARNESS)


def test_episodes_ran_on_their_own_except_the_silent_stream(run: tuple[Path, int]) -> None:
    out, _ = run
    for name, r in results(out, HARNESS).items():
        if name == "harness_deadline":
            # No deadline of Pi's applies once a stream has its headers: it is killed at the scenario's bound, and
            # has written no session yet.
            assert r["execution"]["status"] == "deadline", r["execution"]
            assert r["execution"]["deadline_seconds"] == 120 and r["execution"]["seconds"] < 150, r["execution"]
            assert "Pi wrote no session file" in r["normalize"]["message"]
            continue
        assert r["execution"]["status"] == "exited", (name, r["execution"])
        assert r["normalize"]["status"] == "ok", (name, r["normalize"])
    runtime = json.loads((out / HARNESS / "tool_success" / "runtime.json").read_text())
    assert runtime["harness"]["version"] == "pi 0.73.1"
