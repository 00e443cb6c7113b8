"""The checks' fast looks at the honest case decide exactly what their full readings decide, on damaged evidence too."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from orchestrator.checks import (
    REGISTRY,
    Evidence,
    Witness,
    join,
    looks,
    rollout_schema,
    rollout_semantic,
    scope_of,
    tools,
    wire,
)
from orchestrator.checks.model import Unverifiable
from tests.synthetic import synthetic_episode

# Values a damaged record may hold where it should hold another: wrong types, blanks, ids of other entries, a tuple.
_VALUES: list[Any] = [None, "", "x", 0, 1, 200, 429, True, [], {}, ["a"], {"a": 1}, (1,), "mc-4", "call_2", "inv-2"]


def _damage(root: Any, rng: random.Random) -> None:
    """One change somewhere below the top level: a value replaced, a key dropped, an entry repeated or swapped."""
    node, path = root, []
    for _ in range(rng.randint(2, 6)):
        if isinstance(node, dict) and node:
            key: Any = rng.choice(list(node))
        elif isinstance(node, list) and node:
            key = rng.randrange(len(node))
        else:
            break
        path.append((node, key))
        node = node[key]
    if not path:
        return
    parent, key = path[-1]
    op = rng.random()
    if isinstance(parent, list) and op < 0.3:
        parent.insert(rng.randrange(len(parent) + 1), copy.deepcopy(parent[key]))
    elif isinstance(parent, list) and op < 0.5:
        other = rng.randrange(len(parent))
        parent[key], parent[other] = parent[other], parent[key]
    elif op < 0.65:
        del parent[key]
    else:
        parent[key] = copy.deepcopy(rng.choice(_VALUES))


def _outcomes(ev: Evidence) -> list[tuple[str, Any]]:
    """Every check run on its own (dependencies not applied, so each reads the damage), as run_checks would."""
    out: list[tuple[str, Any]] = []
    for cid, c in REGISTRY.items():
        ev.derived.clear()
        try:
            out.append((cid, c.fn(ev)))
        except Unverifiable as gap:
            out.append((cid, f"unverifiable: {gap}"))
        except Exception as exc:
            out.append((cid, f"{type(exc).__name__}: {exc}"))
    return out


def _no_fast_looks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rollout_schema, "_all_valid", lambda ev, values, pointer: False)
    monkeypatch.setattr(rollout_schema, "_unique_nonblank", lambda ids: False)
    monkeypatch.setattr(rollout_semantic, "decided", lambda fast: False)
    monkeypatch.setattr(tools, "_decided", lambda ev, fast: False)
    monkeypatch.setattr(wire, "_in_wire_order", lambda *args: False)
    monkeypatch.setattr(wire, "_whole_exchanges", lambda *args: False)
    monkeypatch.setattr(looks, "decided", lambda fast: False)
    monkeypatch.setattr(tools, "_aligned", lambda calls, records: False)
    monkeypatch.setattr(join, "_calls_all_ok", lambda ev: None)
    monkeypatch.setattr(join, "_attempts_all_ok", lambda ev: None)


@pytest.mark.parametrize("seed", range(4))
def test_fast_looks_decide_as_the_full_readings(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    scenario, rollout, events, markers = synthetic_episode(6)
    rng = random.Random(seed)
    cases = []
    for n in range(60):
        r, w = copy.deepcopy(rollout), copy.deepcopy(events)
        for _ in range(rng.randint(1, 3)):
            if rng.random() < 0.8:
                _damage(r, rng)
            else:
                event = rng.choice(w)
                event[rng.choice([k for k in event if k != "event"])] = copy.deepcopy(rng.choice(_VALUES))
        try:
            cases.append((r, Witness(w), n % 2 == 0))
        except (KeyError, TypeError):
            continue  # a witness its schema would have refused: never read by the checks
    cases.append((copy.deepcopy(rollout), Witness(copy.deepcopy(events)), True))  # undamaged: every fast look taken

    def run() -> list[list[tuple[str, Any]]]:
        return [
            _outcomes(Evidence(scenario, rollout=r, witness=w, markers=markers, rollout_parsed=parsed))
            for r, w, parsed in cases
        ]

    fast = run()
    _no_fast_looks(monkeypatch)
    assert run() == fast
    # The honest episode passes every check that applies to it (or leaves it unverifiable), either way.
    scope = scope_of(scenario)
    applies = [cid for cid, c in REGISTRY.items() if c.applies(scope) and "execution" not in c.needs]
    failed = [(cid, why) for cid, why in fast[-1] if cid in applies and why and not str(why).startswith("unverif")]
    assert not failed


_LATER = "2026-01-01T00:00:05.000Z"
_EARLIER = "2025-12-31T23:59:00.000Z"
# Lies the whole-column looks (join, looks, wire) pass over only if they are blind to them: one field each.
_TARGETED = [
    ("model_calls", 2, "started_at", _LATER),  # later than the call after it; after its attempt was answered
    ("model_calls", 2, "completed_at", _EARLIER),  # before its own start and its attempt's
    ("model_calls", 3, "started_at", _EARLIER),  # long before its request arrived
    # Before the call recorded before it, inside its attempt's tolerance: only the order is wrong.
    ("model_calls", 3, "started_at+completed_at", "2025-12-31T23:59:59.500Z"),
    ("model_calls", 1, "status_code", 201),
    ("model_calls", 1, "status_code", True),
    ("model_calls", 1, "response_id", ""),
    ("model_calls", 1, "finish_reason", None),
    ("model_calls", 1, "error_category", "timeout"),
    ("model_calls", 1, "request", {"model": "x"}),
    ("model_calls", 1, "protocol", "responses"),
    ("attempt", 2, "started_at", _LATER),
    ("attempt", 2, "status", 201),
    ("attempt", 2, "ended", "cut"),
]


@pytest.mark.parametrize("where,n,field,value", _TARGETED)
def test_column_looks_see_each_targeted_lie(
    where: str, n: int, field: str, value: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario, rollout, events, markers = synthetic_episode(6)
    rollout, events = copy.deepcopy(rollout), copy.deepcopy(events)
    if where == "model_calls":
        for name in field.split("+"):
            rollout["model_calls"][n][name] = value
    else:
        [a for a in events if a["event"] == "attempt"][n][field] = value

    def run() -> list[tuple[str, Any]]:
        ev = Evidence(scenario, rollout=copy.deepcopy(rollout), witness=Witness(copy.deepcopy(events)), markers=markers)
        return _outcomes(ev)

    fast = run()
    _no_fast_looks(monkeypatch)
    assert run() == fast
    assert any(why for _, why in fast)  # the lie is seen, by some check
