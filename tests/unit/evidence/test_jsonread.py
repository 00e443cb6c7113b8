"""The strict JSON reader: every hostile input is a named JsonFault, never a traceback or a hang."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from orchestrator.evidence import jsonread
from orchestrator.evidence.jsonread import (
    MAX_DEPTH,
    JsonFault,
    compact_objects,
    loads,
    read_bytes,
    read_chunks,
    read_json,
)


def test_plain_json_reads() -> None:
    assert loads('{"a": [1, 2.5, "x", null, true], "b": {"c": -12}}') == {
        "a": [1, 2.5, "x", None, True],
        "b": {"c": -12},
    }
    assert loads(b'"[[[{{{"') == "[[[{{{"  # brackets in strings do not nest
    assert loads('"\\\\\\"[[["') == '\\"[[['


def _one_line(line: bytes, max_depth: int = MAX_DEPTH) -> dict[str, Any] | None:
    """The rule compact_objects batches, written line by line: the test's independent reading of it."""
    try:
        value = orjson.loads(line)
        if type(value) is not dict or orjson.dumps(value) != line:
            return None
    except (ValueError, TypeError):
        return None
    return value if line.count(b"[") + line.count(b"{") <= max_depth else None


def test_compact_objects_read_only_what_loads_reads_the_same() -> None:
    line = b'{"a":[1,2.5,"\xc3\xa9"],"b":{"c":null}}'
    assert compact_objects([line]) == [loads(line)] == [_one_line(line)]
    refused = {
        "default separators": b'{"a": 1}',  # loads reads it; only loads may
        "duplicate key": b'{"a":1,"a":2}',  # orjson keeps the last: loads refuses it
        "long integer": b'{"a":123456789012345678901234567890}',
        "not an object": b"[1]",
        "deeper than allowed": b'{"a":' + b"[" * MAX_DEPTH + b"]" * MAX_DEPTH + b"}",
        "not JSON": b'{"a":NaN}',
    }
    for why, text in refused.items():
        assert compact_objects([text]) is None, why
        assert _one_line(text) is None, why
    assert compact_objects([b'{"a":[[[]]]}'], max_depth=3) is None
    assert compact_objects([b'{"a":[[]]}'], max_depth=3) == [{"a": [[]]}]


def test_json_dumps_form_is_read_fast_only_when_it_is_a_serialisers_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    value = {"t": "2026-01-01T00:00:00Z", "s": "a, b: c", "n": [1, 2.5, None, True], "u": "\u00e9\x7f", "o": {}}
    text = json.dumps(value).encode()
    plain = {"t": "2026-01-01T00:00:00Z", "s": "a,b:c d", "n": [1, 2.5, None, True], "o": {"k": [{}]}}
    plain_text = json.dumps(plain).encode()
    assert jsonread._as_written(orjson.loads(text), text, indented=False)
    # Without json.dumps: the comparison that spares it is the one that accepts.
    monkeypatch.setattr(jsonread.json, "dumps", lambda *a, **k: pytest.fail("json.dumps called"))
    assert jsonread._fast(text, MAX_DEPTH) == value
    # No separator and space inside a string: the orjson text itself is what the unspaced text equals.
    assert jsonread._fast(plain_text, MAX_DEPTH) == plain
    monkeypatch.undo()
    refused = {
        "duplicate key": b'{"a": 1, "a": 2}',
        "duplicate key, no space in strings": b'{"a": "x,y", "a": "x,y"}',
        "long integer": b'{"a": 123456789012345678901234567890}',
        "two spaces": b'{"a": 1,  "b": 2}',
        "a newline": b'{"a": 1,\n"b": 2}',
        "a string read differently": b'{"a": "x\\u0041"}',
    }
    for why, text in refused.items():
        assert jsonread._fast(text, MAX_DEPTH) is jsonread._MISS, why
    with pytest.raises(JsonFault, match="duplicate key"):
        loads(b'{"a": 1, "a": 2}')


def test_compact_objects_reads_what_the_rule_reads_line_by_line() -> None:
    good = [b'{"a":[1,2.5,"\xc3\xa9"],"b":{"c":null}}', b'{"s":"},{\\"["}', b"{}"] * 3000
    assert compact_objects(good) == [_one_line(line) for line in good]
    assert compact_objects([]) == []
    refused = {
        # Joined by commas, these two read as the canonical `{"a":1},{"b":[{},{}]}`; neither is JSON alone.
        "split across lines": [b'{"a":1},{"b":[{}', b"{}]}"],
        "one line, two objects": [b'{"a":1},{"b":2}'],
        "trailing space": [b'{"a":1} ', b'{"b":2}'],
        "leading space": [b'{"a":1}', b' {"b":2}'],
        "blank line": [b'{"a":1}', b"", b'{"b":2}'],
        "default separators": [b'{"a":1}', b'{"a": 1}'],
        "duplicate key": [b'{"a":1}', b'{"a":1,"a":2}'],
        "long integer": [b'{"a":123456789012345678901234567890}'],
        "not an object": [b'{"a":1}', b"[1]"],
        "deeper than allowed": [b'{"a":' + b"[" * MAX_DEPTH + b"]" * MAX_DEPTH + b"}"],
        "text, not bytes": ['{"a":1}'],
    }
    for why, lines in refused.items():
        assert compact_objects(lines) is None, why  # type: ignore[arg-type]
        assert None in [_one_line(line) if isinstance(line, bytes) else None for line in lines], why
    late = [b'{"a":1}'] * 5000 + [b'{"a":1,"a":2}']  # past the first batch
    assert compact_objects(late) is None
    assert compact_objects([b'{"a":[[[]]]}'], max_depth=3) is None
    assert compact_objects([b'{"a":[[]]}'], max_depth=3) == [{"a": [[]]}]


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


# The fast path (orjson, accepted only when the text is byte for byte what a serialiser writes for the value it
# read) must refuse exactly what the strict reader refuses, with the strict reader's message.
FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "episodes" / "tool_success"


def _fast_path_takes(raw: bytes) -> bool:
    from orchestrator.evidence.jsonread import _MISS, _fast

    return _fast(raw, MAX_DEPTH) is not _MISS


def test_our_writers_forms_take_the_fast_path(tmp_path: Path) -> None:
    import json

    import orjson

    from orchestrator.output import write_json

    value = {"a": [1, -2, 1.5, 1e16, 2.5e-05, None, True], "s": 'é😀\x7f\x1b\n"\\', "o": {}, "l": []}
    proxy_line = json.dumps(value, allow_nan=False, separators=(",", ":")).encode("ascii")  # proxy_addons/witness.py
    assert _fast_path_takes(proxy_line) and loads(proxy_line) == value
    utf8_line = orjson.dumps(value)  # UTF-8, and its own spelling of floats
    assert _fast_path_takes(utf8_line) and loads(utf8_line) == value
    write_json(tmp_path / "r.json", {"k": value["s"], "deep": [[{"x": [1, 2]}]], "n": 12})
    raw = (tmp_path / "r.json").read_bytes()
    assert _fast_path_takes(raw) and read_json(tmp_path / "r.json")["k"] == value["s"]
    rollout = (FIXTURE / "rollout.json").read_bytes()
    assert _fast_path_takes(rollout) and loads(rollout) == json.loads(rollout)
    assert all(_fast_path_takes(ln) for ln in (FIXTURE / "witness.jsonl").read_bytes().splitlines())
    from orchestrator.scenarios import list_scenarios

    assert all(_fast_path_takes(s.provider_json()) for s in list_scenarios())  # indented, sorted, no final newline


@pytest.mark.parametrize(
    ("text", "fault"),
    [
        (b'{"a":1,"a":2}', "duplicate key 'a'"),  # top level, compact
        (b'{"a":1,"a":1}', "duplicate key 'a'"),  # the same value twice
        (b'{"x":{"b":[1],"b":[1]},"y":2}', "duplicate key 'b'"),  # nested
        (b'[{"k":{}},{"k":{},"k":{}}]', "duplicate key 'k'"),
        (b'{\n  "a": 1,\n  "a": 1\n}\n', "duplicate key 'a'"),  # indented like write_json
        (b'{"a": 1, "a": 2}', "duplicate key 'a'"),  # not a canonical form at all: the strict reader
        (b"[NaN]", "NaN is not JSON"),
        (b'{"x":Infinity}', "Infinity is not JSON"),
        (b"[1e999]", "overflows to infinity"),
        (b"[" + b"1" * 41 + b"]", "integer of 41 digits"),  # orjson reads it as a float
        (b"[" * 129 + b"]" * 129, "nested 129 levels"),
        (b'{"a":' * 129 + b"1" + b"}" * 129, "nested 129 levels"),
        (b"[" * 1100 + b"]" * 1100, "nested 1100 levels"),  # past orjson's own limit
    ],
)
def test_the_fast_path_refuses_what_the_strict_reader_refuses(text: bytes, fault: str) -> None:
    assert not _fast_path_takes(text)
    with pytest.raises(JsonFault, match=fault):
        loads(text)
    with pytest.raises(JsonFault, match=fault):
        loads(text.decode())


def test_depth_in_the_indented_form(tmp_path: Path) -> None:
    from orchestrator.output import write_json

    def nest(levels: int, leaf: object = 1) -> object:
        value: object = leaf
        for i in range(levels):
            value = [value] if i % 2 else {"k": value}
        return value

    write_json(tmp_path / "ok.json", nest(MAX_DEPTH))
    assert _fast_path_takes((tmp_path / "ok.json").read_bytes())
    assert read_json(tmp_path / "ok.json") == nest(MAX_DEPTH)
    write_json(tmp_path / "deep.json", nest(MAX_DEPTH + 1))
    with pytest.raises(JsonFault, match=f"nested {MAX_DEPTH + 1} levels"):
        read_json(tmp_path / "deep.json")
    write_json(tmp_path / "empty.json", nest(MAX_DEPTH, leaf=[]))  # the deepest container is empty: `[]`
    with pytest.raises(JsonFault, match=f"nested {MAX_DEPTH + 1} levels"):
        read_json(tmp_path / "empty.json")


def test_a_duplicate_key_in_a_written_rollout_is_refused(tmp_path: Path) -> None:
    from orchestrator.output import write_json

    rollout = loads((FIXTURE / "rollout.json").read_bytes())
    write_json(tmp_path / "rollout.json", rollout)
    raw = (tmp_path / "rollout.json").read_bytes()
    assert raw.count(b'\n    "name": "reference",\n') == 1
    doubled = raw.replace(b'\n    "name": "reference",\n', b'\n    "name": "reference",\n    "name": "reference",\n')
    (tmp_path / "rollout.json").write_bytes(doubled)
    with pytest.raises(JsonFault, match=r"rollout\.json: duplicate key 'name'"):
        read_json(tmp_path / "rollout.json")


def test_non_canonical_texts_are_still_read_strictly() -> None:
    assert not _fast_path_takes(b'{"a" : 1}') and loads(b'{"a" : 1}') == {"a": 1}  # spaces: the strict reader
    assert not _fast_path_takes(b'{"a":1, "b":2}') and loads(b'{"a":1, "b":2}') == {"a": 1, "b": 2}
    assert _fast_path_takes(b'{"a": [1, 1e+16]}')  # json.dumps' default separators and float spelling
    wide = b"[" + b",".join([b"[1]"] * 300) + b"]"  # 301 brackets, 2 levels: measured by the indented layout
    assert _fast_path_takes(wide) and len(loads(wide)) == 300
    assert not _fast_path_takes(b'{"a":1}\n') and loads(b'{"a":1}\n') == {"a": 1}
    assert not _fast_path_takes(b'["\\ud800"]')  # a lone surrogate: the strict reader refuses it (below)
    assert not _fast_path_takes(b'["\\u00E9"]') and loads(b'["\\u00E9"]') == ["é"]  # upper-case hex
    assert _fast_path_takes(b'["\\u00e9"]')


def test_read_chunks_refuses_a_file_grown_past_the_cap_while_read(tmp_path: Path) -> None:
    path = tmp_path / "grows"
    path.write_bytes(b"0123456789")
    assert b"".join(read_chunks(path, 10, 4)) == b"0123456789"
    pieces = read_chunks(path, 10, 4)
    assert next(pieces) == b"0123"
    with path.open("ab") as f:
        f.write(b"x" * 100)
    with pytest.raises(JsonFault, match="more than the 10-byte cap"):
        list(pieces)
    with pytest.raises(JsonFault, match="is 110 bytes, more than the 10-byte cap"):
        next(read_chunks(path, 10, 4))
    (tmp_path / "link").symlink_to(path)
    with pytest.raises(JsonFault, match="cannot be opened safely"):
        next(read_chunks(tmp_path / "link", 1000, 4))


@pytest.mark.parametrize(
    "text",
    [
        b'["\\ud800"]',  # an escape
        b'{"\\udc80": 1}',  # in a key
        b'["\xed\xa0\x80"]',  # its UTF-8-like bytes, which json.loads decodes with surrogatepass
        b'{"a": [1, "x\\uDBFF"]}',  # upper-case, a high surrogate with no low one after it
        b'["\\udc00\\ud800"]',  # a low then a high: no pair
    ],
)
def test_a_lone_surrogate_is_a_named_fault(text: bytes) -> None:
    with pytest.raises(JsonFault, match=r"a lone surrogate \(\\ud[89a-f][0-9a-f]{2}\) in a string: not Unicode text"):
        loads(text)


def test_surrogate_pairs_and_escaped_backslashes_are_still_text() -> None:
    assert loads(b'["\\ud83d\\ude00"]') == ["\U0001f600"]  # a pair is one astral character
    assert loads(b'["\\\\ud800"]') == ["\\ud800"]  # an escaped backslash, then plain letters
    assert loads('["\ud83d\ude00"]'.encode("utf-16", "surrogatepass").decode("utf-16")) == ["\U0001f600"]


def test_a_text_of_more_values_than_memory_should_hold_is_refused_by_count(monkeypatch: pytest.MonkeyPatch) -> None:
    # 250 MB of `[],` under the byte cap was 87 million lists and 8 GB held: counted, and refused, before parsing.
    monkeypatch.setattr(jsonread, "MAX_VALUES", 100)
    many = b"[" + b"[]," * 100 + b"[]]"
    with pytest.raises(JsonFault, match=r"holds up to 202 values .*, more than 100"):
        loads(many)
    few = b"[" + b"[]," * 40 + b"[]]"  # longer than 100 bytes, 82 values
    assert len(loads(few)) == 41
    # Counted from above: a comma inside a string counts too (a real text holds some thousand per MB, not one per byte).
    with pytest.raises(JsonFault, match="more than 100"):
        loads(b'{"a": "' + b"," * 300 + b'"}')
