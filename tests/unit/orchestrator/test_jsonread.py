"""The strict JSON reader: every hostile input is a named JsonFault, never a traceback or a hang."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orchestrator.evidence.jsonread import MAX_DEPTH, JsonFault, loads, read_bytes, read_json


def test_plain_json_reads() -> None:
    assert loads('{"a": [1, 2.5, "x", null, true], "b": {"c": -12}}') == {
        "a": [1, 2.5, "x", None, True],
        "b": {"c": -12},
    }
    assert loads(b'"[[[{{{"') == "[[[{{{"  # brackets in strings do not nest
    assert loads('"\\\\\\"[[["') == '\\"[[['


@pytest.mark.parametrize(
    ("text", "fault"),
    [
        ("[" * 3000 + "]" * 3000, "nested 3000 levels"),
        ('{"a": ' * 1000 + "1" + "}" * 1000, "nested 1000 levels"),
        ("[NaN]", "NaN is not JSON"),
        ('{"x": Infinity}', "Infinity is not JSON"),
        ("-Infinity", "-Infinity is not JSON"),
        ("1e999", "overflows to infinity"),
        ("1" * 5000, "integer of 5000 digits"),
        ('{"a": 1, "a": 2}', "duplicate key 'a'"),
        ('{"a": 1', "not JSON"),
        ("\xff\xfe garbage", "not JSON"),
        ("", "not JSON"),
    ],
)
def test_hostile_json_is_a_named_fault(text: str, fault: str) -> None:
    with pytest.raises(JsonFault, match=fault):
        loads(text)


def test_depth_at_the_limit_is_fine() -> None:
    assert loads("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None


def test_binary_bytes_are_a_named_fault() -> None:
    with pytest.raises(JsonFault, match="not JSON"):
        loads(os.urandom(4096) + b"\xff")


def test_files_are_read_without_links_fifos_or_without_bound(tmp_path: Path) -> None:
    (tmp_path / "ok.json").write_text('{"a": 1}')
    assert read_json(tmp_path / "ok.json") == {"a": 1}
    (tmp_path / "link.json").symlink_to(tmp_path / "ok.json")
    os.mkfifo(tmp_path / "fifo.json")
    (tmp_path / "dir.json").mkdir()
    with open(tmp_path / "big.json", "wb") as f:
        f.truncate(10 << 30)
    for name, fault in [
        ("link.json", "links are not followed"),
        ("fifo.json", "not a regular file"),
        ("dir.json", "not a regular file"),
        ("big.json", "byte cap"),
    ]:
        with pytest.raises(JsonFault, match=fault):
            read_json(tmp_path / name)
    with pytest.raises(FileNotFoundError):
        read_bytes(tmp_path / "absent.json")


@pytest.mark.parametrize(
    "text",
    [
        '{"n": ' + "9" * 40 + "}",  # the longest integer allowed, read without the integer hook
        '{"n": 1.' + "5" * 60 + "}",  # a long float takes the hooked path and still reads
        '{"x": 1e99, "y": -2.5E-12, "z": 3}',
        '["NaN", "Infinity", "1e999", "' + "7" * 60 + '"]',  # the refused texts inside strings are only text
        '{"a": {"b": [[[[1]]]]}, "c": []}',
    ],
)
def test_fast_and_hooked_reads_agree(text: str) -> None:
    import json

    assert loads(text) == json.loads(text)


def test_a_long_integer_is_refused_wherever_it_is() -> None:
    with pytest.raises(JsonFault, match="integer of 41 digits"):
        loads('{"ok": "' + "1" * 50 + '", "n": [' + "1" * 41 + "]}")
    with pytest.raises(JsonFault, match="overflows"):
        loads('{"s": "' + "1" * 50 + '", "f": 1e999}')
