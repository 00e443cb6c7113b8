"""read_witness: fast for the proxy's own lines, exactly as strict as the strict reader for every other line."""

from __future__ import annotations

import json
from itertools import chain
from pathlib import Path
from typing import Any

import pytest

import orchestrator.checks.evidence as evidence_mod
from orchestrator.checks import read_witness
from orchestrator.evidence import FormatError

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "episodes" / "tool_success" / "witness.jsonl"


def _events() -> list[dict[str, Any]]:
    return [json.loads(ln) for ln in FIXTURE.read_text().splitlines()]


def _proxy_line(event: dict[str, Any]) -> bytes:
    # As proxy_addons/witness.py writes a record.
    return json.dumps(event, allow_nan=False, separators=(",", ":")).encode("ascii")


def _faults(tmp_path: Path, raw: bytes, line: int | None = None) -> list[str]:
    """The faults read_witness names (those of one line when `line` is given: a refused line is left out, so
    the seq of every later line is a fault too)."""
    path = tmp_path / "witness.jsonl"
    path.write_bytes(raw)
    with pytest.raises(FormatError) as exc:
        read_witness(path)
    found = [str(f) for f in exc.value.faults]
    return found if line is None else [f for f in found if f.startswith(f"line {line}: ")]


def _with_line(n: int, line: bytes) -> bytes:
    lines = FIXTURE.read_bytes().splitlines()
    lines[n - 1] = line
    return b"\n".join(lines) + b"\n"


def test_the_proxy_lines_read(tmp_path: Path) -> None:
    w = read_witness(FIXTURE)
    assert w.events == _events()
    assert len(w.tool_calls()) == 2


@pytest.mark.parametrize(
    ("old", "new", "fault"),
    [
        (b'{"schema":"probe-witness/v1",', b'{"schema":"probe-witness/v1","schema":"probe-witness/v1",', "'schema'"),
        (b'"arguments":{', b'"arguments":{"command":"x",', "'command'"),  # nested, another value
        (b'"seq":1,', b'"seq":1,"seq":1,', "'seq'"),
    ],
)
def test_a_duplicate_key_in_a_line_is_a_fault(tmp_path: Path, old: bytes, new: bytes, fault: str) -> None:
    line = FIXTURE.read_bytes().splitlines()[1]
    assert line.count(old) == 1
    assert _faults(tmp_path, _with_line(2, line.replace(old, new)), 2) == [f"line 2: $: duplicate key {fault}"]


def test_refused_numbers_and_depth_are_faults(tmp_path: Path) -> None:
    line = FIXTURE.read_bytes().splitlines()[1]
    assert _faults(tmp_path, _with_line(2, line.replace(b'"seq":1,', b'"seq":NaN,')), 2) == [
        "line 2: $: NaN is not JSON (NaN and Infinity are refused)"
    ]
    assert _faults(tmp_path, _with_line(2, line.replace(b'"seq":1,', b'"seq":' + b"1" * 41 + b",")), 2) == [
        "line 2: $: an integer of 41 digits (more than 40)"
    ]
    deep = line.replace(b'"arguments":{', b'"x":' + b"[" * 129 + b"]" * 129 + b',"arguments":{')
    assert _faults(tmp_path, _with_line(2, deep), 2) == [
        "line 2: $: nested 130 levels deep (more than 128)"
    ]  # in the line object


def test_a_line_not_in_the_proxys_form_is_read_strictly(tmp_path: Path) -> None:
    events = _events()
    spaced = json.dumps(events[1], separators=(", ", " : ")).encode()  # no serialiser form the fast path knows
    path = tmp_path / "witness.jsonl"
    path.write_bytes(_with_line(2, spaced))
    assert read_witness(path).events == events
    doubled = spaced.replace(b'"seq" : 1,', b'"seq" : 1, "seq" : 1,')
    assert _faults(tmp_path, _with_line(2, doubled), 2) == ["line 2: $: duplicate key 'seq'"]


def test_non_ascii_lines(tmp_path: Path) -> None:
    events = _events()
    text = "é 😀 \x7f \u2028 ok"
    events[3]["output"] = text
    path = tmp_path / "witness.jsonl"
    path.write_bytes(b"".join(_proxy_line(e) + b"\n" for e in events))  # escaped: \u00e9 ...
    assert read_witness(path).events[3]["output"] == text
    # Raw UTF-8 (not what the proxy writes) is split as text, as it always was: U+2028 ends a line there.
    path.write_bytes(b"".join(json.dumps(e, ensure_ascii=False).encode() + b"\n" for e in events))
    found = _faults(tmp_path, path.read_bytes())
    assert found[0].startswith("line 4: $: not JSON") and found[1].startswith("line 5: $: not JSON")
    events[3]["output"] = "é 😀"
    path.write_bytes(b"".join(json.dumps(e, ensure_ascii=False).encode() + b"\n" for e in events))
    assert read_witness(path).events[3]["output"] == "é 😀"


def test_line_numbers_count_blank_and_odd_separators_as_before(tmp_path: Path) -> None:
    lines = FIXTURE.read_bytes().splitlines()
    raw = lines[0] + b"\n\n\x1f\n" + b"\n".join(lines[1:]) + b"\n"  # \x1f: blank to str.strip()
    path = tmp_path / "witness.jsonl"
    path.write_bytes(raw)
    assert len(read_witness(path).events) == len(lines)
    raw = lines[0] + b"\n\n" + lines[1].replace(b'"seq":1', b'"seq":"1"') + b"\n" + b"\n".join(lines[2:]) + b"\n"
    assert _faults(tmp_path, raw) == [
        "line 3: $.seq: '1' is not of type 'integer'",
        "line 3: $.seq: expected 1, got '1'",
    ]


def test_an_unhashable_event_kind_is_a_fault_not_a_crash(tmp_path: Path) -> None:
    line = FIXTURE.read_bytes().splitlines()[1].replace(b'"event":"tool_call"', b'"event":["tool_call"]')
    found = _faults(tmp_path, _with_line(2, line))
    assert found and all(f.startswith("line 2: $") for f in found)


@pytest.mark.parametrize("episode", sorted(p.name for p in FIXTURE.parents[1].iterdir() if p.is_dir()))
def test_the_one_pass_reading_gives_what_the_line_by_line_reading_gives(
    episode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = FIXTURE.parents[1] / episode / "witness.jsonl"
    assert evidence_mod._as_proxy_wrote(evidence_mod._lines(path.read_bytes())) is not None  # the proxy's own lines
    fast = read_witness(path).events
    monkeypatch.setattr(evidence_mod, "_as_proxy_wrote", lambda lines, held=None: None)
    assert read_witness(path).events == fast


def test_the_one_pass_reading_leaves_every_other_witness_to_the_line_by_line_reading() -> None:
    lines = FIXTURE.read_bytes().splitlines()
    assert evidence_mod._as_proxy_wrote(lines) is not None
    start = json.loads(lines[0])
    others = {
        "default separators": json.dumps(start).encode(),  # read by `loads` too, but not in the proxy's form
        "duplicate key": lines[0][:-1] + b',"seq":0}',
        "not an object": b"[1]",
        "unknown kind": _proxy_line({**start, "event": "nope"}),
        "unhashable kind": _proxy_line({**start, "event": ["start"]}),
        "seq out of order": _proxy_line({**start, "seq": 1}),
        "invalid": _proxy_line({**start, "scenario": 7}),  # the kind's batch pre-check refuses
        "too deep": _proxy_line({**start, "extra": json.loads("[" * 200 + "]" * 200)}),
    }
    for why, line in others.items():
        assert evidence_mod._as_proxy_wrote([line, *lines[1:]]) is None, why
    assert evidence_mod._as_proxy_wrote(lines[1:]) is None  # the first event is not `start`
    assert evidence_mod._as_proxy_wrote([line.decode() for line in lines]) is None  # split as text: not ASCII


def test_the_one_pass_reading_checks_every_batch_not_only_the_first() -> None:
    events = _events()
    marker = next(e for e in events if e["event"] == "marker")
    end = events[-1]
    body = [_proxy_line(e) for e in events[:-1]]
    n = len(body)
    more = [_proxy_line({**marker, "seq": n + i}) for i in range(3 * evidence_mod._BATCH)]
    lines = [*body, *more, _proxy_line({**end, "seq": n + len(more)})]
    assert evidence_mod._as_proxy_wrote(lines) is not None
    late = n + 2 * evidence_mod._BATCH + 5
    for why, line in {
        "seq out of order": _proxy_line({**marker, "seq": late + 1}),
        "invalid": _proxy_line({**marker, "seq": late, "present": "yes"}),
        "unknown kind": _proxy_line({**marker, "seq": late, "event": "nope"}),
        "default separators": json.dumps({**marker, "seq": late}).encode(),
    }.items():
        assert evidence_mod._as_proxy_wrote([*lines[:late], line, *lines[late + 1 :]]) is None, why


@pytest.mark.parametrize(
    "number", ["²", "٣", "9" * 5000, "", "x1"], ids=["superscript", "arabic-indic", "5000-digits", "empty", "letters"]
)
def test_an_attempt_id_int_refuses_sorts_last_not_a_crash(tmp_path: Path, number: str) -> None:
    # A saved witness may carry any string as an attempt id; only `attempt-<ASCII digits>` has a place in the order.
    events = _events()
    first = next(e for e in events if e["event"] == "attempt")
    odd = f"attempt-{number}"
    first["attempt_id"] = odd
    path = tmp_path / "witness.jsonl"
    path.write_bytes(b"".join(_proxy_line(e) + b"\n" for e in events))
    w = read_witness(path)
    assert [a["attempt_id"] for a in w.attempts(None)][-1] == odd
    assert len(w.attempts(None)) == sum(e["event"] == "attempt" for e in events)


@pytest.mark.parametrize("piece", [1, 7, 64, 1 << 20])
def test_the_witness_read_a_piece_at_a_time_is_split_as_the_whole_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, piece: int
) -> None:
    # Pieces end anywhere: inside a line, between \r and \n, in a run of blank lines; a line may be longer than a
    # piece; the text may end without a newline. The lines are always those bytes.splitlines gives the whole text.
    monkeypatch.setattr(evidence_mod, "_PIECE", piece)
    path = tmp_path / "witness.jsonl"
    for text in [b"", b"a", b"a\n", b"a\r\nb\rc\n\n\nd", b"x" * 100 + b"\r\n" + b"y" * 50, b"\n\n", b"a\r"]:
        path.write_bytes(text)
        assert list(chain.from_iterable(evidence_mod._proxy_lines(path, 1000))) == text.splitlines(), text
    for episode in sorted(p.name for p in FIXTURE.parents[1].iterdir()):
        source = FIXTURE.parents[1] / episode / "witness.jsonl"
        assert read_witness(source).events == [json.loads(line) for line in source.read_text().splitlines()]


def test_a_byte_the_proxy_never_writes_late_in_the_witness_is_read_strictly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Found after many lines were already read in the proxy's form: the whole witness is read again, strictly.
    monkeypatch.setattr(evidence_mod, "_PIECE", 64)
    events = _events()
    events[-1]["note"] = "é"  # not in the schema: a named fault, found by the strict reading
    path = tmp_path / "witness.jsonl"
    path.write_bytes(b"".join(json.dumps(e, separators=(",", ":")).encode() + b"\n" for e in events))
    with pytest.raises(FormatError) as exc:
        read_witness(path)
    assert [f.path for f in exc.value.faults] == [f"line {len(events)}: $"]
    path.write_bytes(FIXTURE.read_bytes().replace(b'"at":', b'"at" :', 1))  # not the proxy's form: read strictly
    assert read_witness(path).events == _events()


def test_a_witness_past_its_cap_is_a_fault(tmp_path: Path) -> None:
    size = FIXTURE.stat().st_size
    with pytest.raises(FormatError, match=f"more than the {size - 1}-byte cap"):
        read_witness(FIXTURE, size - 1)
    assert read_witness(FIXTURE, size).events == _events()
