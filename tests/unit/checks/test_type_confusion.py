"""An object or array where a rollout holds an id or a step number: each check that looks it up names it, no
check crashes on it (a crash would still fail, but as "checker error", with no reason a reader can act on)."""

from __future__ import annotations

import copy
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


ODD_VALUES = [1.5, True, "text", [1], {"k": 1}, None]


def _places(rollout: dict[str, Any]) -> list[tuple[str, Place]]:
    """Every top-level field, and every field of the first element of each list of objects."""
    places: list[tuple[str, Place]] = []
    for key, value in rollout.items():
        places.append((key, lambda r, v, key=key: r.__setitem__(key, v)))
        if isinstance(value, list) and value and isinstance(value[0], dict):
            places += [(f"{key}[0].{field}", _first(key, field)) for field in value[0]]
    return places


def test_any_value_of_any_type_in_any_field_is_no_crash() -> None:
    # Found by a sweep: a number for model_calls made calls.witness_response a "checker error" (exit 2).
    crashes = []
    for place_name, place in _places(load_episode("tool_success").rollout):
        for value in ODD_VALUES:
            ep = load_episode("tool_success")
            place(ep.rollout, value)
            for cid, (_, reasons) in ep.evaluate().items():
                crashes += [f"{place_name}={value!r}: {cid}: {r}" for r in reasons if r.startswith("checker error")]
    assert crashes == []


def test_a_twin_rollout_of_any_shape_is_no_crash() -> None:
    # Found by a sweep: token_stats a list, or model_call_refs a number, in a twin made transport.parity crash.
    crashes = []
    places = _places(load_episode("tool_success").rollout)
    for key, field in (("model_calls", "token_stats"), ("steps", "model_call_refs")):
        places.append((f"{key}[*].{field}", lambda r, v, k=key, f=field: [e.__setitem__(f, v) for e in r[k]]))
    for place_name, place in places:
        for value in ODD_VALUES:
            ep = load_episode("tool_success")
            twin = copy.deepcopy(ep.rollout)
            place(twin, value)
            ep.twin = (twin, copy.deepcopy(ep.witness))
            _status, reasons = ep.evaluate()["transport.parity"]
            crashes += [f"{place_name}={value!r}: {r}" for r in reasons if r.startswith("checker error")]
    assert crashes == []
