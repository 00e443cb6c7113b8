"""Hostile values in a captured run's native logs end as gaps, skipped records or named errors, never as a crash."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from orchestrator.harnesses import NormalizeError, get_harness
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
