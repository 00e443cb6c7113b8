"""SciCode (nvidia-scicode 26.3) through the whole catalogue: the scenario x check verdict table equals the golden.

Regenerate the golden after a deliberate change (see tests/harnesses/golden.py):
    .venv/bin/harness-probe run -H scicode -o /tmp/scicode-run
    .venv/bin/python -m tests.harnesses.golden scicode /tmp/scicode-run
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harnesses.golden import UPDATE, assert_matches_golden, golden_path, results, run_catalogue
from tests.integration.conftest import Images, engine, images

pytestmark = [
    pytest.mark.docker,
    pytest.mark.harness,
    # Until a real catalogue run has written tests/golden/scicode/verdicts.json (never written by hand; with
    # HARNESS_PROBE_UPDATE_GOLDEN=1 this test's run writes it).
    pytest.mark.skipif(
        not golden_path("scicode").is_file() and not UPDATE, reason="no golden verdict table from a real run yet"
    ),
]
__all__ = ["engine", "images"]  # fixtures, re-exported so pytest finds them here

HARNESS = "scicode"


@pytest.fixture(scope="module")
def run(images: Images, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    out = tmp_path_factory.mktemp(HARNESS) / "out"
    return out, run_catalogue(HARNESS, out)


def test_verdict_table_equals_the_golden(run: tuple[Path, int]) -> None:
    assert_matches_golden(*run, HARNESS)


def test_each_scripted_step_reached_scicode_as_a_python_block_and_ran_in_its_scoring_phase(
    run: tuple[Path, int],
) -> None:
    out, _ = run
    episode = out / HARNESS / "tool_success"
    played = json.loads((episode / "scenario.json").read_text())
    assert played["harness_profile"] == {"delivery": "python_blocks"}
    events = [json.loads(line) for line in (episode / "witness.jsonl").read_text().splitlines()]
    attempts = [e for e in events if e["event"] == "attempt"]
    # One fresh request per sub-step, no tools, never streamed.
    assert [(a["status"], a["stream"]) for a in attempts] == [(200, False)] * 3
    assert not any(e["event"] == "tool_result_seen" for e in events)
    markers = [e for e in events if e["event"] == "marker"]
    assert len(markers) == 2 and all(m["present"] and m["matches"] for m in markers)
    rollout = json.loads((episode / "rollout.json").read_text())
    assert [t["status"] for t in rollout["tool_calls"]] == ["succeeded"] * 3


def test_no_egress_even_at_the_end_of_a_run(run: tuple[Path, int]) -> None:
    """SciCode downloads its test data from Google Drive when it is absent: the image's empty file keeps it local."""
    out, _ = run
    for name, r in results(out, HARNESS).items():
        checks = {c["id"]: c["status"] for c in r["checks"]}
        assert checks["egress.none"] == "pass", name
