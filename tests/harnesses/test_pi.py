"""Pi 0.73.1 through the whole catalogue: the scenario x check verdict table equals the committed golden.

Regenerate the golden after a deliberate change (see tests/harnesses/golden.py):
    .venv/bin/harness-probe run -H pi --timeout 60 -o /tmp/pi-run
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
    # Pi waits on a silent stream forever (harness_deadline): every other episode ends within seconds, so a 60 s
    # deadline gives the same verdicts as the default 300 s at a fifth of the cost.
    return out, run_catalogue(HARNESS, out, "--timeout", "60")


def test_verdict_table_equals_the_golden(run: tuple[Path, int]) -> None:
    assert_matches_golden(*run, HARNESS)


def test_episodes_ran_on_their_own_except_the_silent_stream(run: tuple[Path, int]) -> None:
    out, _ = run
    for name, r in results(out, HARNESS).items():
        if name == "harness_deadline":
            # No deadline applies once a stream has its headers: Pi is killed, and has written no session yet.
            assert r["execution"]["status"] == "timeout", r["execution"]
            assert "Pi wrote no session file" in r["normalize"]["message"]
            continue
        assert r["execution"]["status"] == "exited", (name, r["execution"])
        assert r["normalize"]["status"] == "ok", (name, r["normalize"])
    runtime = json.loads((out / HARNESS / "tool_success" / "runtime.json").read_text())
    assert runtime["harness"]["version"] == "pi 0.73.1"
