"""Terminus 2 (terminus-ai 2.0.4) through the whole catalogue: the scenario x check verdict table equals the golden.

Regenerate the golden after a deliberate change (see tests/harnesses/golden.py):
    .venv/bin/harness-probe run -H terminus-2 -o /tmp/terminus-run
    .venv/bin/python -m tests.harnesses.golden terminus-2 /tmp/terminus-run
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.atif import read_atif_rollout
from tests.harnesses.golden import UPDATE, assert_matches_golden, golden_path, results, run_catalogue
from tests.integration.conftest import Images, engine, images

pytestmark = [
    pytest.mark.docker,
    pytest.mark.harness,
    # Until a real catalogue run has written tests/golden/terminus-2/verdicts.json (never written by hand; with
    # HARNESS_PROBE_UPDATE_GOLDEN=1 this test's run writes it).
    pytest.mark.skipif(
        not golden_path("terminus-2").is_file() and not UPDATE, reason="no golden verdict table from a real run yet"
    ),
]
__all__ = ["engine", "images"]  # fixtures, re-exported so pytest finds them here

HARNESS = "terminus-2"


@pytest.fixture(scope="module")
def run(images: Images, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    out = tmp_path_factory.mktemp(HARNESS) / "out"
    return out, run_catalogue(HARNESS, out)


def test_verdict_table_equals_the_golden(run: tuple[Path, int]) -> None:
    assert_matches_golden(*run, HARNESS)


def test_the_steps_reached_terminus_as_typed_commands(run: tuple[Path, int]) -> None:
    out, _ = run
    episode = out / HARNESS / "tool_success"
    played = json.loads((episode / "scenario.json").read_text())
    assert played["harness_profile"] == {"delivery": "keystrokes"}
    events = [json.loads(line) for line in (episode / "witness.jsonl").read_text().splitlines()]
    calls = [e for e in events if e["event"] == "tool_call"]
    markers = {e["tool_call_id"]: (e["present"], e["matches"]) for e in events if e["event"] == "marker"}
    assert calls and all(markers.get(c["tool_call_id"]) == (True, True) for c in calls)
    result = results(out, HARNESS)["tool_success"]
    assert result["normalize"]["status"] == "ok"
    # Judged as played: the keystroke profile puts the checks that join on tool call ids out of scope.
    checks = {c["id"]: c["status"] for c in result["checks"]}
    assert checks["tools.witness_ids"] == checks["tools.request_join"] == "not_applicable"


def test_its_own_trajectory_reads_as_atif(run: tuple[Path, int]) -> None:
    out, _ = run
    rollout, why = read_atif_rollout(out / HARNESS / "tool_success", HARNESS)
    assert why is None and rollout is not None
    assert len(rollout["model_calls"]) >= 3
