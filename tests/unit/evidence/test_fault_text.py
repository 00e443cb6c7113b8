"""A format fault names its place and what is wrong in a few hundred characters, whatever the value it quotes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.evidence import FormatError, faults
from orchestrator.evidence.validate import FAULT_CHARS, Fault, load_json

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "episodes" / "tool_success"


def test_a_fault_quoting_a_huge_value_keeps_its_start_and_its_end() -> None:
    rollout = json.loads((FIXTURE / "rollout.json").read_text())
    rollout["task_id"] = ["y" * 50] * 100_000  # jsonschema's message quotes all 5 MB of it
    (found,) = [f for f in faults(rollout, "probe-rollout/v1") if f.path == "$.task_id"]
    assert len(found.message) <= FAULT_CHARS + 60
    assert found.message.startswith("['yyy") and "is not of type 'string'" in found.message[-40:]
    assert "characters left out" in found.message


def test_a_scenario_past_its_caps_is_named_in_a_short_error(tmp_path: Path) -> None:
    scenario = json.loads((FIXTURE / "scenario.json").read_text())
    scenario["script"] = [{"tool_calls": [{"exit_code": 0}]}] * 20_000 + [{"final_answer": "x"}]
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(scenario))
    with pytest.raises(FormatError) as exc:
        load_json(path, "probe-scenario/v1")
    text = str(exc.value)
    assert len(text) < len(str(path)) + FAULT_CHARS + 100
    assert "$.script" in text and text.rstrip().endswith("is too long")


def test_a_short_fault_is_left_whole_and_a_long_path_is_bounded() -> None:
    assert Fault("$.a", "is wrong").message == "is wrong"
    long = Fault("$." + "k" * 10_000, "is wrong")
    assert len(long.path) <= FAULT_CHARS + 60 and long.path.startswith("$.kkk")


def test_a_cut_falls_between_words_and_a_prefixed_path_keeps_its_one_cut() -> None:
    from orchestrator.evidence.text import bounded

    ids = [f"call_{i:04d}" for i in range(1000)]
    text = bounded("; ".join(ids), 500)
    assert len(text) < 560
    # No fragment of an id reads as another id: every id-like word kept is one of the originals, whole.
    words = [w.strip(";") for w in text.split() if w.startswith("call_")]
    assert words and set(words) <= set(ids)
    fault = Fault("$." + "k" * 1000, "is wrong")
    named = Fault(f"line 12: {fault.path}", fault.message)
    assert named.path == f"line 12: {fault.path}"  # not cut a second time: its count stays true
    assert named.path.count("characters left out") == 1
