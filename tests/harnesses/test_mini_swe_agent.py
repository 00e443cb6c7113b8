"""mini-SWE-agent 2.4.6 through the whole catalogue: the scenario x check verdict table equals the committed golden.

Regenerate the golden after a deliberate change (see tests/harnesses/golden.py):
    .venv/bin/harness-probe run -H mini-swe-agent -o /tmp/mswea-run
    .venv/bin/python -m tests.harnesses.golden mini-swe-agent /tmp/mswea-run
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harnesses.golden import assert_matches_golden, results, run_catalogue
from tests.integration.conftest import Images, engine, images

pytestmark = [pytest.mark.docker, pytest.mark.harness]
__all__ = ["engine", "images"]  # fixtures, re-exported so pytest finds them here

HARNESS = "mini-swe-agent"


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
        assert r["normalize"]["status"] == "ok", (name, r["normalize"])


def test_the_final_answer_went_through_the_shell(run: tuple[Path, int]) -> None:
    out, _ = run
    episode = out / HARNESS / "tool_success"
    played = json.loads((episode / "scenario.json").read_text())
    assert played["harness_profile"] == {
        "final_answer": {"via": "shell", "prefix": "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}
    }
    events = [json.loads(line) for line in (episode / "witness.jsonl").read_text().splitlines()]
    (submit,) = [e for e in events if e["event"] == "tool_call" and e.get("final_submit")]
    marker = [e for e in events if e["event"] == "marker" and e["tool_call_id"] == submit["tool_call_id"]]
    assert [(m["present"], m["matches"]) for m in marker] == [(True, True)]
    rollout = json.loads((episode / "rollout.json").read_text())
    assert rollout["outcome"]["final_answer"] == "PROBE_DONE"
