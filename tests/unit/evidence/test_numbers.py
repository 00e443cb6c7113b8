"""Integral floats become ints exactly where the schema says integer, and nowhere else."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from orchestrator.checks import read_witness
from orchestrator.evidence import fragment_faults
from orchestrator.evidence.numbers import integral_as_int


def test_integral_floats_at_integer_positions_become_ints_and_nothing_else_changes() -> None:
    call: dict[str, Any] = {
        "status_code": 429.0,
        "token_stats": {"prompt": 1.2e1, "completion": 3.5, "reasoning": None, "total": True, "cached": 0},
        "request": {"max_tokens": 4096.0},
    }
    rollout: dict[str, Any] = {"model_calls": [call, "not a call", {"status_code": "429"}], "steps": [{"step_no": 2.0}]}
    integral_as_int(rollout, "probe-rollout/v1")
    assert type(call["status_code"]) is int and call["status_code"] == 429
    assert call["token_stats"]["prompt"] == 12 and type(call["token_stats"]["prompt"]) is int
    assert call["token_stats"]["completion"] == 3.5  # a fraction: invalid to the schema and to the checks alike
    assert call["token_stats"]["total"] is True  # a boolean is no number to JSON Schema: left for the checks to name
    assert type(call["request"]["max_tokens"]) is float  # any value may stand there: not the schema's integer
    assert rollout["model_calls"][1:] == ["not a call", {"status_code": "429"}]
    assert type(rollout["steps"][0]["step_no"]) is int


def test_witness_events_of_every_kind_are_read_by_their_own_branch() -> None:
    events: list[dict[str, Any]] = [
        {"event": "attempt", "seq": 1.0, "status": 5.04e2, "usage": {"prompt": 7.0}},
        {"event": "tool_call", "seq": 2.0, "exit_code": 1.0},
    ]
    integral_as_int(events, "probe-witness/v1")
    assert [(type(e["seq"]), e["seq"]) for e in events] == [(int, 1), (int, 2)]
    assert type(events[0]["status"]) is int and type(events[0]["usage"]["prompt"]) is int
    assert type(events[1]["exit_code"]) is int


def test_the_schema_reads_an_integral_float_as_an_integer_and_a_fraction_as_none() -> None:
    """Why the reader must: the schema accepts 429.0 as an integer (JSON Schema 2020-12), so it cannot refuse it."""
    pointer = "/$defs/model_call/properties/status_code"
    assert fragment_faults(4.29e2, "probe-rollout/v1", pointer, "$") == []
    assert fragment_faults(429.5, "probe-rollout/v1", pointer, "$") != []


def test_a_witness_as_the_proxy_writes_it_has_its_attempts_numbers_read_as_integers(tmp_path: Path) -> None:
    """orjson's own form of a line holding 429.0 takes the fast reading, not the strict one: its attempts' numbers
    (the ones checks test for int) are still integers to the checks."""
    from tests.unit.checks.conftest import load_episode

    events = load_episode("retry_429").witness
    for e in events:
        if e["event"] == "attempt":
            e["status"] = float(e["status"])
            if isinstance(e.get("usage"), dict):
                e["usage"] = {k: float(v) if isinstance(v, int) else v for k, v in e["usage"].items()}
    path = tmp_path / "witness.jsonl"
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    assert b'"status":429.0' in path.read_bytes()
    attempts = read_witness(path).attempts(None)
    assert {type(a["status"]) for a in attempts} == {int}
    assert {type(v) for a in attempts if a.get("usage") for v in a["usage"].values() if v is not None} == {int}
