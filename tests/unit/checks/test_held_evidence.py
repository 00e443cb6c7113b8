"""Evidence held compactly (orchestrator/evidence/compact.py): the same values to every reader, in less memory."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

from orchestrator.checks import Evidence, read_witness, run_checks, scope_of
from orchestrator.evidence.compact import Held, hold_rollout
from tests.synthetic import synthetic_episode

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "episodes" / "tool_success"


def _proxy_lines(events: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(e, separators=(",", ":")).encode() + b"\n" for e in events)


def test_held_records_are_the_same_dicts_in_less_memory() -> None:
    plain = [
        {"attempt_id": f"attempt-{i}", "status": 200, "usage": {"prompt": i}, **{f"field_{k}": k for k in range(20)}}
        for i in range(50)
    ]
    held = Held().hold(["attempt"] * 50, copy.deepcopy(plain))
    assert held == plain
    assert all(type(h) is dict for h in held)
    assert [list(h) for h in held] == [list(p) for p in plain]  # key order kept: json writes them alike
    assert [json.dumps(h) for h in held] == [json.dumps(p) for p in plain]
    # The keys are the class's, once: a held record is a fraction of an ordinary dict.
    assert sys.getsizeof(held[10]) < sys.getsizeof(plain[10]) / 2


def test_a_string_read_twice_is_held_once_and_no_value_stands_for_another() -> None:
    a, b = "call_" + str(7), "call_" + str(7)  # equal, two objects (as two JSON readings give)
    assert a is not b
    held = Held()
    first = held.hold(["tool"], [{"id": a, "n": 1}])
    second = held.hold(["result"], [{"id": b, "n": 1}])
    assert first[0]["id"] is second[0]["id"]
    # 1, 1.0 and True are equal keys of a table: a column of them is left as it is, each value its own type.
    mixed = held.hold(["x"] * 4, [{"v": 1}, {"v": True}, {"v": 1.0}, {"v": "1"}])
    assert [type(m["v"]) for m in mixed] == [int, bool, float, str]


def test_records_in_another_order_or_changed_stay_correct() -> None:
    held = Held().hold(["k"] * 3, [{"a": 1, "b": 2}, {"b": 3, "a": 4}, {"a": 5, "c": [6]}])
    assert held == [{"a": 1, "b": 2}, {"b": 3, "a": 4}, {"a": 5, "c": [6]}]
    assert list(held[1]) == ["b", "a"]
    held[0]["z"] = 0  # a check may add a key: the record becomes an ordinary dict, as correct
    del held[0]["a"]
    assert held[0] == {"b": 2, "z": 0}


def test_records_past_the_layout_bounds_are_left_as_they_are() -> None:
    odd: list[dict[Any, Any]] = [{1: "a", "b": "c"}, {"k" * 100: 1}, {f"key_{i}": i for i in range(40)}]
    held = Held().hold(["odd-int", "odd-long", "odd-many"], copy.deepcopy(odd))
    assert held == odd


def test_a_hostile_rollout_is_held_unchanged() -> None:
    rollout: dict[str, Any] = {
        "model_calls": [None, 3, {"model_call_id": "m", "token_stats": [1]}, {"token_stats": {"prompt": 1}}],
        "steps": "not a list",
        "tool_calls": [{"arguments": "text"}, {"arguments": {"command": "ls"}}, []],
        "invocations": [
            None,
            {"conversation": [1, {"role": "assistant", "tool_calls": [None, {"arguments": {"a": {"b": 1}}}]}]},
            {"conversation": "x"},
        ],
    }
    before = copy.deepcopy(rollout)
    hold_rollout(rollout, Held())
    assert rollout == before
    assert json.dumps(rollout) == json.dumps(before)


def test_a_held_episode_is_judged_as_a_plain_one(tmp_path: Path) -> None:
    scenario, rollout, events, markers = synthetic_episode(30, 4)
    path = tmp_path / "witness.jsonl"
    path.write_bytes(_proxy_lines(events))
    plain = Evidence(scenario, rollout=copy.deepcopy(rollout), witness=read_witness(path), markers=markers)
    held_rollout = copy.deepcopy(rollout)
    held = Held()
    hold_rollout(held_rollout, held)
    compact = Evidence(scenario, rollout=held_rollout, witness=read_witness(path, held=held), markers=markers)
    assert compact.witness is not None and compact.witness.events == events
    assert held_rollout == rollout
    # The tool call id the rollout and the witness both hold is one object.
    assert held_rollout["tool_calls"][0]["tool_call_id"] is compact.witness.tool_calls()[0]["tool_call_id"]

    def statuses(ev: Evidence) -> list[tuple[str, str, list[str]]]:
        return [(r.id, str(r.status), r.reasons) for r in run_checks(ev, scope_of(scenario))]

    judged = statuses(compact)
    assert judged == statuses(plain)
    assert all(status != "fail" for _, status, _ in judged)


def test_the_fixture_witness_reads_as_its_lines() -> None:
    w = read_witness(FIXTURE / "witness.jsonl")
    assert w.events == [json.loads(ln) for ln in (FIXTURE / "witness.jsonl").read_text().splitlines()]
    assert sys.getsizeof(w.attempts(None)[0]) < sys.getsizeof(dict(w.attempts(None)[0]))


def test_a_record_with_a_key_its_class_lacks_is_left_as_read() -> None:
    # The class's key table lives as long as the process: a later record's new key must never join it.
    held = Held()
    first = held.hold(["late-key"], [{"a": 1, "b": 2}])[0]
    extra = {"a": 3, "k" * 5_000: 4}
    subset = {"b": 5}
    later = held.hold(["late-key", "late-key"], [extra, subset])
    assert later[0] is extra  # left as it was read
    assert later[1] is not subset and later[1] == {"b": 5}  # a subset of the class's keys is held
    assert first == {"a": 1, "b": 2}


def test_many_short_lists_are_held_in_few_passes(monkeypatch: Any) -> None:
    history: list[Any] = [{"role": "user", "content": "task"}]
    for i in range(4_000):
        history.append(
            {"role": "assistant", "content": None, "tool_calls": [{"tool_call_id": f"c{i}", "arguments": {"a": i}}]}
        )
    rollout: dict[str, Any] = {"invocations": [{"conversation": history}]}
    expected = copy.deepcopy(rollout)
    calls: list[int] = []
    hold = Held.hold

    def counted(self: Held, kinds: list[str], records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        calls.append(len(records))
        return hold(self, kinds, records)

    monkeypatch.setattr(Held, "hold", counted)
    hold_rollout(rollout, Held())
    assert rollout == expected
    # 12,001 records (4,001 messages, 4,000 calls, 4,000 arguments) in chunks: not a pass per message.
    assert sum(calls) == 12_001 and len(calls) < 60, len(calls)
    # Inner objects are held before the records holding them, so the records point at the held ones.
    message = rollout["invocations"][0]["conversation"][1]
    assert (
        message["tool_calls"][0]["arguments"]
        is not expected["invocations"][0]["conversation"][1]["tool_calls"][0]["arguments"]
    )
    assert sys.getsizeof(message["tool_calls"][0]) < sys.getsizeof(dict(message["tool_calls"][0]))
