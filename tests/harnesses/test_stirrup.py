"""Stirrup 0.2.1 through the whole catalogue: the scenario x check verdict table equals the committed golden.

Regenerate the golden after a deliberate change (see tests/harnesses/golden.py):
    .venv/bin/harness-probe run -H stirrup -o /tmp/stirrup-run
    .venv/bin/python -m tests.harnesses.golden stirrup /tmp/stirrup-run
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harnesses.golden import assert_matches_golden, results, run_catalogue
from tests.integration.conftest import Images, engine, images

pytestmark = [pytest.mark.docker, pytest.mark.harness]
__all__ = ["engine", "images"]  # fixtures, re-exported so pytest finds them here

HARNESS = "stirrup"


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


def test_commands_went_through_code_exec_and_the_answer_through_finish(run: tuple[Path, int]) -> None:
    out, _ = run
    episode = out / HARNESS / "tool_failure"
    played = json.loads((episode / "scenario.json").read_text())
    assert played["harness_profile"] == {"final_answer": {"via": "tool", "tool": "finish", "argument": "reason"}}
    events = [json.loads(line) for line in (episode / "witness.jsonl").read_text().splitlines()]
    calls = [e for e in events if e["event"] == "tool_call"]
    assert [(c["name"], c["arguments"]) for c in calls] == [("code_exec", {"cmd": c["command"]}) for c in calls]
    seen = [e["output"] for e in events if e["event"] == "tool_result_seen"]
    assert [f"<exit_code>{c['exit_code']}</exit_code>" in s for c, s in zip(calls, seen, strict=True)] == [True, True]
    record = json.loads((episode / "native" / ".stirrup-probe" / "run.json").read_text())
    assert record["returned"]["finish_params"] == {"reason": "PROBE_DONE", "paths": []}
    rollout = json.loads((episode / "rollout.json").read_text())
    assert rollout["outcome"]["final_answer"] == "PROBE_DONE"
