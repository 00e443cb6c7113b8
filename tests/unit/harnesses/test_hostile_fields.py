"""Hostile values in a captured run's native logs end as gaps, skipped records or named errors, never as a crash."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from orchestrator.harnesses import NormalizeError, get_harness
from orchestrator.harnesses.base import tool_arguments
from orchestrator.harnesses.jsonl import loads_line
from orchestrator.harnesses.values import bounded, count, integer
from tests.unit.harnesses.captured import materialize

BIG = "9" * 5000  # an integer json.loads refuses to convert (more than 4300 digits)


def _one(native: Path, glob: str) -> Path:
    return sorted(native.glob(glob))[0]


def _edit(path: Path, pred: Callable[[dict[str, Any]], bool], fn: Callable[[dict[str, Any]], None]) -> None:
    """Applies `fn` to every JSONL record of `path` that `pred` selects."""
    out = []
    for line in path.read_text().split("\n"):
        try:
            record = json.loads(line)
        except ValueError:
            out.append(line)
            continue
        if isinstance(record, dict) and pred(record):
            fn(record)
            line = json.dumps(record)
        out.append(line)
    path.write_text("\n".join(out))


def _normalize(harness: str, native: Path) -> dict[str, Any]:
    return dict(get_harness(harness).normalize(native))


def _codes(rollout: dict[str, Any]) -> list[str]:
    return [g["code"] for g in rollout["gaps"]]


CC = ".claude/projects/*/*.jsonl"
CX = "sessions/*/*/*/rollout-*.jsonl"
GM = ".gemini/tmp/*/chats/*.jsonl"


def _is(kind: str) -> Callable[[dict[str, Any]], bool]:
    return lambda r: r.get("type") == kind


def test_claude_code_user_message_null(tmp_path: Path) -> None:
    ep = materialize("claude-code", "tool_failure", tmp_path / "ep")
    _edit(_one(ep.native, CC), _is("user"), lambda r: r.__setitem__("message", None))
    rollout = _normalize("claude-code", ep.native)
    assert rollout["tool_calls"] == []  # no result was readable: no execution record


def test_claude_code_content_not_a_list(tmp_path: Path) -> None:
    ep = materialize("claude-code", "tool_failure", tmp_path / "ep")
    _edit(_one(ep.native, CC), _is("assistant"), lambda r: r["message"].__setitem__("content", 1.5))
    rollout = _normalize("claude-code", ep.native)
    assert rollout["tool_calls"] == []


def test_claude_code_message_id_not_a_string(tmp_path: Path) -> None:
    ep = materialize("claude-code", "tool_failure", tmp_path / "ep")
    _edit(_one(ep.native, CC), _is("assistant"), lambda r: r["message"].__setitem__("id", {"a": 1}))
    rollout = _normalize("claude-code", ep.native)
    assert rollout["model_calls"]
    assert all(c["response_id"] is None for c in rollout["model_calls"])


def test_codex_event_item_id_unhashable(tmp_path: Path) -> None:
    ep = materialize("codex", "parallel_tools", tmp_path / "ep")
    _edit(ep.native / ".codex-probe/events.jsonl", _is("item.completed"), lambda r: r["item"].__setitem__("id", []))
    assert _normalize("codex", ep.native)["model_calls"]


def test_codex_payload_role_unhashable(tmp_path: Path) -> None:
    ep = materialize("codex", "parallel_tools", tmp_path / "ep")
    _edit(_one(ep.native, CX), _is("response_item"), lambda r: r["payload"].__setitem__("role", []))
    assert _normalize("codex", ep.native)["model_calls"]


def test_codex_rollout_that_is_a_directory_cannot_be_read(tmp_path: Path) -> None:
    ep = materialize("codex", "parallel_tools", tmp_path / "ep")
    path = _one(ep.native, CX)
    path.unlink()
    path.mkdir()
    with pytest.raises(NormalizeError, match="cannot be read"):
        _normalize("codex", ep.native)


def test_codex_rollout_line_with_a_huge_integer_is_a_corrupt_line(tmp_path: Path) -> None:
    ep = materialize("codex", "parallel_tools", tmp_path / "ep")
    path = _one(ep.native, CX)
    path.write_text(path.read_text() + '{"type":"x","payload":{"n":' + BIG + "}}\n")
    assert "rollout.corrupt_line" in _codes(_normalize("codex", ep.native))


def test_gemini_tool_calls_not_a_list(tmp_path: Path) -> None:
    ep = materialize("gemini-cli", "tool_failure", tmp_path / "ep")
    _edit(_one(ep.native, GM), _is("gemini"), lambda r: r.__setitem__("toolCalls", 1.5))
    assert _normalize("gemini-cli", ep.native)["tool_calls"] == []


def test_gemini_tool_result_not_a_list(tmp_path: Path) -> None:
    ep = materialize("gemini-cli", "tool_failure", tmp_path / "ep")

    def hostile(r: dict[str, Any]) -> None:
        for call in r.get("toolCalls") or []:
            call["result"] = 1.5

    _edit(_one(ep.native, GM), _is("gemini"), hostile)
    rollout = _normalize("gemini-cli", ep.native)
    assert rollout["tool_calls"]
    assert all(t["output"] is None for t in rollout["tool_calls"])


def test_nooa_tool_call_id_unhashable(tmp_path: Path) -> None:
    ep = materialize("nooa", "tool_failure", tmp_path / "ep")
    path = ep.native / "agent/trajectory.json"
    data = json.loads(path.read_text())
    assert isinstance(data, list)
    path.write_text(
        json.dumps([dict(x, tool_call_id=[]) if isinstance(x, dict) and "tool_call_id" in x else x for x in data])
    )
    assert _normalize("nooa", ep.native)["tool_calls"] == []


def test_hermes_blob_in_a_token_column_is_not_copied(tmp_path: Path) -> None:
    ep = materialize("hermes", "parallel_tools", tmp_path / "ep")
    with closing(sqlite3.connect(ep.native / "state.db")) as conn:
        conn.execute("UPDATE sessions SET input_tokens = ?, estimated_cost_usd = ?", (b"\xff\xfe", b"\x00"))
        conn.commit()
    rollout = _normalize("hermes", ep.native)
    json.dumps(rollout, allow_nan=False)  # a BLOB copied in would make it no JSON
    sessions = rollout["extensions"]["hermes"]["sessions"]
    assert sessions
    assert all(s["input_tokens"] is None and s["estimated_cost_usd"] is None for s in sessions)


def test_claude_code_line_with_a_huge_integer_is_a_corrupt_line(tmp_path: Path) -> None:
    ep = materialize("claude-code", "tool_failure", tmp_path / "ep")
    path = _one(ep.native, CC)
    path.write_text(path.read_text() + '{"type":"x","n":' + BIG + "}\n")
    assert "native.transcript_corrupt_line" in _codes(_normalize("claude-code", ep.native))


def test_pi_settings_with_a_huge_integer_are_unreadable(tmp_path: Path) -> None:
    ep = materialize("pi", "parallel_tools", tmp_path / "ep")
    (ep.native / "agent/settings.json").write_text('{"x": ' + BIG + "}")
    assert "settings.unreadable" in _codes(_normalize("pi", ep.native))


def test_copilot_line_and_usage_with_a_huge_integer_are_unreadable(tmp_path: Path) -> None:
    ep = materialize("copilot", "parallel_tools", tmp_path / "ep")
    path = _one(ep.native, "session-state/*/events.jsonl")
    path.write_text(path.read_text() + '{"type":"x","n":' + BIG + "}\n")
    (ep.native / ".copilot-probe/usage.json").write_text('{"n": ' + BIG + "}")
    codes = _codes(_normalize("copilot", ep.native))
    assert "native.session_corrupt_line" in codes
    assert "native.usage_file_unreadable" in codes


def test_pi_session_line_with_a_huge_integer_is_unreadable(tmp_path: Path) -> None:
    ep = materialize("pi", "parallel_tools", tmp_path / "ep")
    path = _one(ep.native, ".pi-probe/sessions/*.jsonl")
    path.write_text(path.read_text() + '{"type":"x","id":"y","n":' + BIG + "}\n")
    rollout = _normalize("pi", ep.native)
    assert any(
        g["code"] == "session.entry_unreadable" and "integer string conversion" in g["detail"] for g in rollout["gaps"]
    )


def test_codex_reads_the_rollout_stdout_names_not_a_decoy(tmp_path: Path) -> None:
    ep = materialize("codex", "parallel_tools", tmp_path / "ep")
    clean = _normalize("codex", ep.native)
    decoy = _one(materialize("codex", "model_error", tmp_path / "other").native, CX)
    # Sorted first: today's order alone would read the decoy.
    shutil.copyfile(decoy, _one(ep.native, CX).with_name("rollout-2000-01-01T00-00-00-decoy.jsonl"))
    rollout = _normalize("codex", ep.native)
    assert rollout["model_calls"] == clean["model_calls"]
    assert rollout["tool_calls"] == clean["tool_calls"]
    assert "invocations.unread_rollouts" in _codes(rollout)


def test_codex_without_a_thread_on_stdout_reads_the_first_rollout(tmp_path: Path) -> None:
    ep = materialize("codex", "parallel_tools", tmp_path / "ep")
    _edit(ep.native / ".codex-probe/events.jsonl", _is("thread.started"), lambda r: r.pop("thread_id"))
    decoy = _one(materialize("codex", "model_error", tmp_path / "other").native, CX)
    shutil.copyfile(decoy, _one(ep.native, CX).with_name("rollout-2000-01-01T00-00-00-decoy.jsonl"))
    rollout = _normalize("codex", ep.native)
    assert (
        rollout["model_calls"]
        == _normalize("codex", materialize("codex", "model_error", tmp_path / "m").native)["model_calls"]
    )
    assert "invocations.unread_rollouts" in _codes(rollout)


INT60 = "9" * 60  # an integer json.loads takes but no rollout may hold (more than MAX_INT_DIGITS digits)


def test_claude_code_token_count_past_40_digits_is_unknown(tmp_path: Path) -> None:
    ep = materialize("claude-code", "tool_failure", tmp_path / "ep")
    for path in [_one(ep.native, CC), *ep.native.glob(".claude-probe/*.jsonl")]:
        path.write_text(re.sub(r'("output_tokens":)\d+', r"\g<1>" + INT60, path.read_text()))
    rollout = _normalize("claude-code", ep.native)
    assert rollout["model_calls"]
    assert all(c["token_stats"]["completion"] is None for c in rollout["model_calls"])
    assert INT60 not in json.dumps(rollout)


def test_hermes_error_status_past_40_digits_is_unknown(tmp_path: Path) -> None:
    ep = materialize("hermes", "model_error", tmp_path / "ep")
    for path in ep.native.rglob("request_dump_*.json"):
        path.write_text(re.sub(r'("status_code": )\d+', r"\g<1>" + INT60, path.read_text()))
    rollout = _normalize("hermes", ep.native)
    assert rollout["model_calls"]
    assert INT60 not in json.dumps(rollout)


def test_values_past_40_digits_are_unknown() -> None:
    assert integer(10**40 - 1) == 10**40 - 1
    assert integer(10**40) is None and integer(-(10**40)) is None and count(int(INT60)) is None
    assert bounded({"a": [int(INT60), 1], "b": True}) == {"a": [None, 1], "b": True}


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_claude_code_line_with_a_non_finite_number_is_a_corrupt_line(tmp_path: Path, constant: str) -> None:
    ep = materialize("claude-code", "tool_failure", tmp_path / "ep")
    path = _one(ep.native, CC)
    path.write_text(re.sub(r'("id":)"msg_[^"]*"', r"\g<1>" + constant, path.read_text(), count=1))
    rollout = _normalize("claude-code", ep.native)
    json.dumps(rollout, allow_nan=False)
    assert "native.transcript_corrupt_line" in _codes(rollout)


def test_codex_rollout_line_with_nan_is_a_corrupt_line(tmp_path: Path) -> None:
    ep = materialize("codex", "parallel_tools", tmp_path / "ep")
    path = _one(ep.native, CX)
    path.write_text(path.read_text() + '{"type":"x","payload":{"n":NaN}}\n')
    assert "rollout.corrupt_line" in _codes(_normalize("codex", ep.native))


@pytest.mark.parametrize(
    "text",
    ["NaN", "[Infinity]", '{"n": 1e400}', '["\\ud800"]', '{"\\udc00": 1}', b'["\xed\xa0\x80"]', '["\ud800"]'],
)
def test_loads_line_refuses_what_is_no_json(text: str | bytes) -> None:
    with pytest.raises(ValueError):
        loads_line(text)


@pytest.mark.parametrize("text", ['["\\ud83d\\ude00"]', '["\\\\ud800"]', b'["\xf0\x9f\x98\x80"]'])
def test_loads_line_takes_text_that_only_looks_like_a_surrogate(text: str | bytes) -> None:
    assert loads_line(text) in (["\U0001f600"], ["\\ud800"])


def test_claude_code_line_with_a_lone_surrogate_is_a_corrupt_line(tmp_path: Path) -> None:
    ep = materialize("claude-code", "tool_failure", tmp_path / "ep")
    path = _one(ep.native, CC)
    lines = path.read_text().splitlines()
    path.write_text("\n".join([*lines, '{"type":"user","message":{"role":"user","content":"\\ud800"}}']) + "\n")
    rollout = _normalize("claude-code", ep.native)
    json.dumps(rollout, ensure_ascii=False).encode("utf-8")  # the rollout is Unicode text, so its reader takes it
    assert "native.transcript_corrupt_line" in _codes(rollout)


def test_tool_arguments_with_a_huge_integer_or_nan_stay_as_recorded() -> None:
    for raw in ['{"n": ' + BIG + "}", '{"n": NaN}']:
        assert tool_arguments(raw) == raw


def test_hermes_tool_calls_with_a_huge_integer_are_unreadable(tmp_path: Path) -> None:
    ep = materialize("hermes", "parallel_tools", tmp_path / "ep")
    with closing(sqlite3.connect(ep.native / "state.db")) as conn:
        conn.execute("UPDATE messages SET tool_calls = ? WHERE tool_calls IS NOT NULL", ("[" + BIG + "]",))
        conn.commit()
    assert "conversation.tool_calls_unreadable" in _codes(_normalize("hermes", ep.native))
