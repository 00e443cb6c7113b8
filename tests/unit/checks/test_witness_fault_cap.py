"""A witness of many lines that are not witness events is refused with its first faults named and the rest counted:
the faults' text (which can quote each line once per branch of the schema) stays bounded."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from orchestrator.checks.evidence import MAX_FAULT_LINES, read_witness
from orchestrator.evidence import FormatError

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "episodes" / "tool_success" / "witness.jsonl"
START = FIXTURE.read_text().splitlines()[0]  # a valid `start` line


def test_lines_past_the_listed_faults_are_counted(tmp_path: Path) -> None:
    witness = tmp_path / "witness.jsonl"
    pad = json.dumps({"pad": "a" * 1000})
    witness.write_text(START + "\n" + (pad + "\n") * 2000)
    tracemalloc.start()
    try:
        with pytest.raises(FormatError) as caught:
            read_witness(witness)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    described = [f for f in caught.value.faults if f.path.startswith("line ")]
    assert {f.path.split(":")[0] for f in described} == {f"line {n}" for n in range(2, 2 + MAX_FAULT_LINES)}
    assert caught.value.faults[-1].message == f"and {2000 - MAX_FAULT_LINES} more lines with faults, not listed"
    # Every line described would be tens of megabytes of messages; 2,000 lines of the file are 2 MB.
    assert peak < 40 * 1024 * 1024


def test_a_few_faults_are_all_described(tmp_path: Path) -> None:
    witness = tmp_path / "witness.jsonl"
    witness.write_text(START + "\n" + "[1]\n" * 3)
    with pytest.raises(FormatError) as caught:
        read_witness(witness)
    assert {f.path.split(":")[0] for f in caught.value.faults} == {"line 2", "line 3", "line 4"}
    assert not any("not listed" in f.message for f in caught.value.faults)
