"""An object or array where a rollout holds an id or a step number: each check that looks it up names it, no
check crashes on it (a crash would still fail, but as "checker error", with no reason a reader can act on)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from orchestrator.checks import Status
from tests.unit.checks.conftest import Episode, load_episode

Place = Callable[[dict[str, Any], Any], None]


def _first(key: str, field: str) -> Place:
    def put(rollout: dict[str, Any], value: Any) -> None:
        rollout[key][0][field] = value

    return put


def _first_ref(key: str) -> Place:
    def put(rollout: dict[str, Any], value: Any) -> None:
        rollout[key][0]["model_call_refs"][0] = value

    return put


CASES = [  # (episode, where the value goes, the check that names it, the start of its reason)
    ("tool_success", _first("model_calls", "model_call_id"), "calls.identity", "$.model_calls[0].model_call_id"),
    ("tool_success", _first("invocations", "invocation_id"), "invocations.identity", "$.invocations[0]"),
    ("tool_success", _first("tool_calls", "tool_call_id"), "tools.record", "$.tool_calls[0]"),
    ("tool_success", _first_ref("steps"), "steps.call_refs", ""),
    ("context_compaction", _first("compactions", "step_no"), "compaction.recorded", "compactions[0]: step_no"),
    ("context_compaction", _first("compactions", "invocation_id"), "compaction.recorded", "compactions[0]: invoc"),
    ("context_compaction", _first_ref("compactions"), "compaction.recorded", "compactions[0]: model call"),
    ("context_compaction", _first("compactions", "model_call_refs"), "compaction.recorded", "compactions[0]: model"),
    ("context_compaction", _first_ref("invocations"), "invocations.identity", "$.invocations[0]"),
    ("context_compaction", _first("steps", "step_no"), "steps.numbering", ""),
]


@pytest.mark.parametrize("value", [{"id": "x"}, ["x"]], ids=["object", "array"])
@pytest.mark.parametrize(
    ("episode", "place", "check", "reason"), CASES, ids=[f"{c[2]}-{i}" for i, c in enumerate(CASES)]
)
def test_a_container_in_a_key_place_is_named_not_a_crash(
    episode: str, place: Place, check: str, reason: str, value: Any
) -> None:
    ep: Episode = load_episode(episode)
    assert all(status != Status.FAIL for status, _ in ep.evaluate().values())  # the untouched episode passes
    place(ep.rollout, value)
    results = ep.evaluate()
    crashed = {cid: r for cid, (_, reasons) in results.items() for r in reasons if r.startswith("checker error")}
    assert not crashed
    status, reasons = results[check]
    assert status == Status.FAIL
    assert any(r.startswith(reason) for r in reasons), reasons
