"""Integral floats become ints exactly where the schema says integer, and nowhere else."""

from __future__ import annotations

from typing import Any

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
