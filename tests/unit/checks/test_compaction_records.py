"""Each compaction record is held to the wire, in every scenario: a record moved to another step, records trading
their calls, an extra record, and a compaction invented where the wire shows none each fail compaction.recorded,
and only it (mutations of the reference harness's real context_compaction episode and of real harnesses' episodes)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from orchestrator.checks import Status
from orchestrator.report.published import ARCHIVE, unpack_evidence
from tests.unit.checks.conftest import Episode, load_episode
from tests.unit.checks.test_negative_controls import lie_compaction_moved as moved
from tests.unit.checks.test_negative_controls import lie_compaction_traded as traded
from tests.unit.checks.test_negative_controls import test_mutation_fails_exactly_its_check as fails_exactly

RUNS = Path(__file__).resolve().parents[3] / "docs" / "results" / "runs"


def _records(ep: Episode) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = ep.rollout["compactions"]
    return records


def extra(ep: Episode) -> None:
    # A history drop claimed at step 1, where the wire shows no summarization and no shortened history.
    _records(ep).append({**_records(ep)[0], "step_no": 1, "model_call_refs": []})


def doubled(ep: Episode) -> None:
    # A second record for the one compaction the wire shows before step 3.
    _records(ep).append({**_records(ep)[0], "model_call_refs": []})


def policy_call(ep: Episode) -> None:
    # A record naming step 3's own policy call as its summarization call (taken out of the step, so every
    # other check's accounting still holds).
    step = next(s for s in ep.rollout["steps"] if s["step_no"] == 3)
    record = _records(ep)[0]
    record["model_call_refs"] = [*record["model_call_refs"], step["model_call_refs"][0]]
    ep.rollout["steps"] = [s for s in ep.rollout["steps"] if s is not step]


CONTROLS = [("moved", moved), ("traded", traded), ("extra", extra), ("doubled", doubled)]


@pytest.mark.parametrize("mutate", [m for _, m in CONTROLS], ids=[n for n, _ in CONTROLS])
def test_a_record_the_wire_does_not_show_fails_exactly_compaction_recorded(mutate: Any) -> None:
    fails_exactly("compaction.recorded", "context_compaction", mutate)


def test_the_reasons_name_the_step_the_wire_shows() -> None:
    ep = load_episode("context_compaction")
    traded(ep)
    status, reasons = ep.evaluate()["compaction.recorded"]
    assert status == Status.FAIL
    assert reasons == [
        "compactions[0]: step_no 3, but its summarization call attempt-5 came before the policy call of step 4",
        "compactions[1]: step_no 4, but its summarization call attempt-3 came before the policy call of step 3",
    ]
    ep = load_episode("context_compaction")
    extra(ep)
    assert ep.evaluate()["compaction.recorded"][1] == [
        "compactions[2]: step_no 1, but the wire shows compaction only before the policy calls of steps 3, 4"
    ]


def test_a_policy_call_named_as_a_summarization_call_fails() -> None:
    ep = load_episode("context_compaction")
    policy_call(ep)
    status, reasons = ep.evaluate()["compaction.recorded"]
    assert status == Status.FAIL
    assert any("is not a summarization call on the wire" in r for r in reasons), reasons


def _invented(ep: Episode) -> None:
    """A compaction record invented in a scenario that never provoked one: its step and invocation are real."""
    step = ep.rollout["steps"][-1]
    ep.rollout["compactions"] = [
        {
            "invocation_id": step["invocation_id"],
            "step_no": step["step_no"],
            "model_call_refs": [],
            "timestamp": step["timestamp"],
        }
    ]


@pytest.mark.parametrize("fixture", ["tool_success", "retry_429", "native:codex/retry_429", "native:pi/tool_failure"])
def test_a_compaction_invented_outside_context_compaction_fails_only_compaction_recorded(fixture: str) -> None:
    honest = load_episode(fixture)
    before = honest.evaluate()
    assert before["compaction.recorded"] == (Status.NOT_APPLICABLE, [])
    _invented(honest)
    after = honest.evaluate()
    assert after["compaction.recorded"] == (
        Status.FAIL,
        ["compactions[0]: the wire shows no compaction at all (no summarization call, no shortened history)"],
    )
    assert {k: v for k, v in after.items() if k != "compaction.recorded"} == {
        k: v for k, v in before.items() if k != "compaction.recorded"
    }


def test_outside_context_compaction_no_record_means_not_applicable_and_an_empty_list_too() -> None:
    ep = load_episode("tool_success")
    ep.rollout["compactions"] = []
    assert ep.evaluate()["compaction.recorded"] == (Status.NOT_APPLICABLE, [])
    ep.rollout["compactions"] = {"step_no": 1}
    status, reasons = ep.evaluate()["compaction.recorded"]
    assert status == Status.FAIL and "is not an array" in reasons[0]


def _published(harness: str, scenario: str, tmp: Path) -> Episode:
    """A real harness's episode from its published run's evidence archive."""
    unpack_evidence(RUNS / harness / ARCHIVE, tmp)
    root = tmp / harness / scenario
    return Episode(
        scenario=json.loads((root / "scenario.json").read_text()),
        rollout=json.loads((root / "rollout.json").read_text()),
        witness=[json.loads(line) for line in (root / "witness.jsonl").read_text().splitlines() if line.strip()],
        markers={p.name: p.read_text() for p in sorted((root / "markers").glob("*"))},
    )


def test_opencodes_real_record_is_placed_by_order_and_a_moved_one_is_named(tmp_path: Path) -> None:
    """OpenCode, the one real harness that records its compactions, keeps no response ids and records its
    summarization call among its successes, so the order join pairs none of them. Its record still fails for
    its call that no id joins (as on its published page); moved to another step it is named for the step too,
    since its other successes pair in order with the wire's policy replies."""
    honest = _published("opencode", "context_compaction", tmp_path / "run")
    before = honest.evaluate()
    assert before["compaction.recorded"][0] == Status.FAIL
    assert before["compaction.recorded"][1] == [
        r for r in before["compaction.recorded"][1] if "cannot be joined to a recorded compaction call" in r
    ]
    moved = honest.copy()
    assert moved.rollout["compactions"][0]["step_no"] == 2
    moved.rollout["compactions"][0]["step_no"] = 3
    after = moved.evaluate()
    assert after["compaction.recorded"][1] == [
        "compactions[0]: step_no 3, but the wire shows compaction only before the policy calls of steps 2",
        *before["compaction.recorded"][1],
    ]
    assert {k: v for k, v in after.items() if k != "compaction.recorded"} == {
        k: v for k, v in before.items() if k != "compaction.recorded"
    }


def test_opencodes_compaction_episode_holds_its_other_successes_times_to_the_wire(tmp_path: Path) -> None:
    """Class 3 where OpenCode compacts: its summarization call among its successes breaks the order join, and its
    other successes are paired in order with the policy replies; one of them shifted past its reply fails
    calls.witness_times alone."""
    honest = _published("opencode", "context_compaction", tmp_path / "run")
    before = honest.evaluate()
    assert before["calls.witness_times"] == (Status.PASS, [])
    helpers = {ref for rec in honest.rollout["compactions"] for ref in rec["model_call_refs"]}
    shifted = honest.copy()
    last = [c for c in shifted.rollout["model_calls"] if c["model_call_id"] not in helpers][-1]
    answered = [e for e in shifted.witness if e["event"] == "attempt" and e["kind"] == "model"][-1]["completed_at"]
    late = datetime.fromisoformat(answered) + timedelta(seconds=5)
    last["started_at"] = late.isoformat().replace("+00:00", "Z")
    last["completed_at"] = (late + timedelta(seconds=1)).isoformat().replace("+00:00", "Z")
    after = shifted.evaluate()
    status, reasons = after["calls.witness_times"]
    assert status == Status.FAIL and len(reasons) == 1 and "after the proxy answered" in reasons[0], reasons
    assert {k: v for k, v in after.items() if k != "calls.witness_times"} == {
        k: v for k, v in before.items() if k != "calls.witness_times"
    }
