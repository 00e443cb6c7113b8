"""mini-SWE-agent 2.4.6 through the whole catalogue: the scenario x check verdict table equals the committed golden."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator.evidence import load_json
from orchestrator.scenarios import list_scenarios
from tests.integration.conftest import Images, engine, hp, images, labelled

pytestmark = [pytest.mark.docker, pytest.mark.harness]
__all__ = ["engine", "images"]  # fixtures, re-exported so pytest finds them here

HARNESS = "mini-swe-agent"
GOLDEN = Path(__file__).resolve().parents[1] / "golden" / HARNESS / "verdicts.json"
# HARNESS_PROBE_UPDATE_GOLDEN=1 rewrites the golden from this run (review the diff before committing it).
UPDATE = os.environ.get("HARNESS_PROBE_UPDATE_GOLDEN") == "1"


@pytest.fixture(scope="module")
def run(images: Images, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, int]]:
    out = tmp_path_factory.mktemp(HARNESS) / "out"
    res = hp("run", "-H", HARNESS, "-o", str(out), timeout=1800)
    assert (out / "summary.json").is_file(), res.stdout[-3000:] + res.stderr[-3000:]
    yield out, res.code


def _results(out: Path) -> dict[str, dict[str, Any]]:
    found = sorted(out.glob(f"{HARNESS}/*/scenario_result.json"))
    return {p.parent.name: load_json(p, "scenario-result/v1") for p in found}


def verdict_table(out: Path) -> dict[str, Any]:
    return {
        "harness": HARNESS,
        "scenarios": {
            name: {"verdict": r["verdict"], "checks": {c["id"]: c["status"] for c in r["checks"]}}
            for name, r in _results(out).items()
        },
    }


def _differences(golden: dict[str, Any], now: dict[str, Any]) -> list[str]:
    lines = []
    for name in sorted(set(golden["scenarios"]) | set(now["scenarios"])):
        g, n = golden["scenarios"].get(name), now["scenarios"].get(name)
        if g is None or n is None:
            lines.append(f"{name}: {'new scenario' if g is None else 'scenario missing from this run'}")
            continue
        if g["verdict"] != n["verdict"]:
            lines.append(f"{name}: verdict golden {g['verdict']}, now {n['verdict']}")
        for check in sorted(set(g["checks"]) | set(n["checks"])):
            before, after = g["checks"].get(check, "absent"), n["checks"].get(check, "absent")
            if before != after:
                lines.append(f"{name} / {check}: golden {before}, now {after}")
    return lines


def test_verdict_table_equals_the_golden(run: tuple[Path, int]) -> None:
    out, code = run
    now = verdict_table(out)
    assert sorted(now["scenarios"]) == sorted(s.name for s in list_scenarios())
    if UPDATE:
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(json.dumps(now, indent=2, sort_keys=True) + "\n")
    golden = json.loads(GOLDEN.read_text())
    diff = _differences(golden, now)
    reasons = {
        f"{name} / {c['id']}": c["reasons"][:2]
        for name, r in _results(out).items()
        for c in r["checks"]
        if c["status"] == "fail" and f"{name} / {c['id']}" in " ".join(diff)
    }
    assert diff == [], (
        "verdicts differ from tests/golden/mini-swe-agent/verdicts.json:\n"
        + "\n".join(diff)
        + "\nreasons now: "
        + json.dumps(reasons, indent=1)[:4000]
    )
    # Some check fails in every scenario (mini records no request start times), so the run exits 1, not 2.
    assert code == 1


def test_every_episode_ran_to_the_end_on_its_own(run: tuple[Path, int]) -> None:
    out, _ = run
    for name, r in _results(out).items():
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


def test_nothing_is_left_behind(run: tuple[Path, int]) -> None:
    out, _ = run
    summary = json.loads((out / "summary.json").read_text())
    for kind in ("ps", "network", "volume"):
        assert labelled(kind, summary["run_id"]) == []
