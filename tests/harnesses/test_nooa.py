"""NOOA 0.0.10 (nemo-harbor, BenchAgent) through the whole catalogue: the verdict table equals the committed golden.

Regenerate the golden after a deliberate change (see tests/harnesses/golden.py):
    .venv/bin/harness-probe run -H nooa -o /tmp/nooa-run
    .venv/bin/python -m tests.harnesses.golden nooa /tmp/nooa-run
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harnesses.golden import assert_matches_golden, results, run_catalogue
from tests.integration.conftest import Images, engine, images

pytestmark = [pytest.mark.docker, pytest.mark.harness]
__all__ = ["engine", "images"]  # fixtures, re-exported so pytest finds them here

HARNESS = "nooa"


@pytest.fixture(scope="module")
def run(images: Images, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    out = tmp_path_factory.mktemp(HARNESS) / "out"
    return out, run_catalogue(HARNESS, out)


def test_verdict_table_equals_the_golden(run: tuple[Path, int]) -> None:
    assert_matches_golden(*run, HARNESS)


def test_every_episode_ran_and_was_normalized(run: tuple[Path, int]) -> None:
    out, _ = run
    for name, r in results(out, HARNESS).items():
        assert r["execution"]["status"] in ("exited", "timeout", "deadline"), (name, r["execution"])
        assert r["normalize"]["status"] == "ok", (name, r["normalize"])


def test_commands_went_through_execute_python_and_the_answer_through_return_result(run: tuple[Path, int]) -> None:
    out, _ = run
    episode = out / HARNESS / "tool_failure"
    played = json.loads((episode / "scenario.json").read_text())
    assert played["harness_profile"] == {"final_answer": {"via": "tool", "tool": "return_result", "argument": "result"}}
    events = [json.loads(line) for line in (episode / "witness.jsonl").read_text().splitlines()]
    calls = [e for e in events if e["event"] == "tool_call"]
    assert [c["name"] for c in calls] == ["execute_python", "execute_python"]
    assert all("await self.shell.run(" in c["arguments"]["code"] for c in calls)
    # The markers were written by the shell NOOA exposes, and its own record shows the scripted exit codes.
    assert [e["present"] for e in events if e["event"] == "marker"] == [True, True]
    result = json.loads((episode / "native" / "agent" / "result.json").read_text())
    assert (result["success"], result["response"]) == (True, "PROBE_DONE")
    rollout = json.loads((episode / "rollout.json").read_text())
    assert [(t["exit_code"], t["status"]) for t in rollout["tool_calls"]] == [(7, "failed"), (0, "succeeded")]
    assert rollout["outcome"]["final_answer"] == "PROBE_DONE"
