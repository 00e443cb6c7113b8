"""The OpenClaw normalizer on stores captured from real runs, on edited copies (each harness-specific reading has a
control that makes its check fail), and on hostile or broken stores."""

from __future__ import annotations

import gzip
import json
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from orchestrator.checks import Status
from orchestrator.harnesses import NormalizeError, get_harness
from orchestrator.paths import EpisodePaths
from tests.unit.harnesses import captured

HARNESS = "openclaw"
CAPTURED = captured.captured(HARNESS)
DB = Path("agents") / "main" / "agent" / "openclaw-agent.sqlite"
ALWAYS = {"model_calls.status_code_inferred", "model_calls.finish_reason_translated"}


def materialize(name: str, dest: Path) -> EpisodePaths:
    return captured.materialize(HARNESS, name, dest)


def normalize(native: Path) -> dict[str, Any]:
    return get_harness(HARNESS).normalize(native)


def edit(paths: EpisodePaths, table: str, change: Callable[[dict[str, Any]], dict[str, Any] | None]) -> None:
    """Rewrite each event of `table` in the captured store (None deletes the row)."""
    with closing(sqlite3.connect(paths.native / DB)) as conn:
        rows = conn.execute(f"SELECT rowid, event_json FROM {table} WHERE event_json IS NOT NULL").fetchall()
        for rowid, text in rows:
            changed = change(json.loads(text))
            if changed is None:
                conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (rowid,))
            else:
                conn.execute(f"UPDATE {table} SET event_json = ? WHERE rowid = ?", (json.dumps(changed), rowid))
        conn.commit()


def statuses(paths: EpisodePaths, rollout: dict[str, Any]) -> dict[str, Status]:
    return {k: v.status for k, v in captured.replay(paths, rollout).items()}


@pytest.mark.parametrize("name", CAPTURED)
def test_captured_episode_gets_the_verdicts_of_its_real_run(tmp_path: Path, name: str) -> None:
    captured.assert_replays_its_real_run(HARNESS, name, tmp_path / name)


def test_replies_keep_response_ids_usage_and_reasoning_tokens(tmp_path: Path) -> None:
    paths = materialize("tool_success", tmp_path / "ep")
    rollout = normalize(paths.native)
    replies = [e for e in captured.witness(paths) if e["event"] == "attempt"]
    assert [c["response_id"] for c in rollout["model_calls"]] == [e["response_id"] for e in replies]
    for call, reply in zip(rollout["model_calls"], replies, strict=True):
        usage = reply["usage"]
        assert call["token_stats"]["prompt"] == usage["prompt"] and call["token_stats"]["cached"] == usage["cached"]
        # OpenClaw keeps usage.reasoningTokens, which Pi's record (the same pi-ai message shape) drops.
        assert call["token_stats"]["reasoning"] == usage["reasoning"] is not None
    assert set(captured.gap_codes(rollout)) == ALWAYS
    assert rollout["outcome"]["status"] == "completed"


def test_reasoning_tokens_are_read_from_the_store(tmp_path: Path) -> None:
    # Control: a reasoning count edited in the transcript makes tokens.match fail.
    paths = materialize("tool_success", tmp_path / "ep")

    def bump(e: dict[str, Any]) -> dict[str, Any]:
        usage = e.get("message", {}).get("usage")
        if isinstance(usage, dict) and "reasoningTokens" in usage:
            usage["reasoningTokens"] += 5
        return e

    edit(paths, "transcript_events", bump)
    assert statuses(paths, normalize(paths.native))["tokens.match"] is Status.FAIL


def test_failed_attempts_come_from_the_runtime_trajectory(tmp_path: Path) -> None:
    paths = materialize("retry_429", tmp_path / "ep")
    rollout = normalize(paths.native)
    failed = [c for c in rollout["model_calls"] if c["status_code"] != 200]
    assert [(c["status_code"], c["error_category"]) for c in failed] == [(429, "http_429")] * 2
    # Both retried attempts belong to the step of the reply that followed them.
    assert len(rollout["steps"][0]["model_call_refs"]) == 3
    assert rollout["provenance"] == {"retry_placement": "inferred"}
    # Control: without the trajectory the transcript alone holds no failed attempt, and the multiset check fails.
    edit(paths, "trajectory_runtime_events", lambda e: None)
    dropped = normalize(paths.native)
    assert all(c["status_code"] == 200 for c in dropped["model_calls"])
    assert statuses(paths, dropped)["attempts.multiset"] is Status.FAIL


def test_a_failed_command_keeps_its_exit_code_but_is_recorded_as_a_success(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    rollout = normalize(paths.native)
    issued = {e["tool_call_id"]: e["exit_code"] for e in captured.witness(paths) if e["event"] == "tool_call"}
    assert {t["tool_call_id"]: t["exit_code"] for t in rollout["tool_calls"]} == issued
    # OpenClaw's exec result says isError false (and details.status `completed`) for a command that exited 7: the
    # status is what it recorded, and tools.witness_status fails on it.
    assert {t["status"] for t in rollout["tool_calls"]} == {"succeeded"} and 7 in issued.values()
    assert statuses(paths, rollout)["tools.witness_status"] is Status.FAIL


def test_the_exit_code_is_read_from_the_results_details(tmp_path: Path) -> None:
    # Control: the exit code edited in the exec result's details makes the record disagree with the wire.
    paths = materialize("tool_success", tmp_path / "ep")
    assert statuses(paths, normalize(paths.native))["tools.witness_status"] is Status.PASS

    def five(e: dict[str, Any]) -> dict[str, Any]:
        details = e.get("message", {}).get("details")
        if isinstance(details, dict) and "exitCode" in details:
            details["exitCode"] = 5
        return e

    edit(paths, "transcript_events", five)
    assert statuses(paths, normalize(paths.native))["tools.witness_status"] is Status.FAIL


@pytest.mark.parametrize(
    ("name", "protocol", "prefix"),
    [("responses_retry_429", "responses", "call_"), ("messages_retry_429", "messages", "toolu")],
)
def test_other_protocols_keep_the_wires_ids_and_their_failed_attempts(
    tmp_path: Path, name: str, protocol: str, prefix: str
) -> None:
    paths = materialize(name, tmp_path / "ep")
    rollout = normalize(paths.native)
    assert {c["protocol"] for c in rollout["model_calls"]} == {protocol}
    assert [c["status_code"] for c in rollout["model_calls"]] == [429, 429, 200, 200, 200]
    issued = [e["tool_call_id"] for e in captured.witness(paths) if e["event"] == "tool_call"]
    # Responses ids come back as the model sent them (`call_<hex>`, OpenClaw stores `call_<hex>|fc_<hex>`);
    # Messages ids were issued alphanumeric (harness_profile), as OpenClaw's sanitizer would make them.
    assert [t["tool_call_id"] for t in rollout["tool_calls"]] == issued
    assert all(i.startswith(prefix) for i in issued)


def test_no_store_is_a_normalize_error(tmp_path: Path) -> None:
    paths = materialize("tool_success", tmp_path / "ep")
    (paths.native / DB).unlink()
    with pytest.raises(NormalizeError, match="no agent store"):
        normalize(paths.native)


def test_an_unreadable_event_is_a_named_gap_not_a_crash(tmp_path: Path) -> None:
    paths = materialize("tool_success", tmp_path / "ep")
    with closing(sqlite3.connect(paths.native / DB)) as conn:
        conn.execute("UPDATE transcript_events SET event_json = '[1, 2' WHERE seq = 0")
        conn.commit()
    assert "store.event_unreadable" in captured.gap_codes(normalize(paths.native))


def test_a_compressed_event_is_named_unread(tmp_path: Path) -> None:
    paths = materialize("tool_success", tmp_path / "ep")
    navigation = {
        "version": 1,
        "report": {"kind": "canonical"},
        "navigation": {},
        "reset": {},
        "model": {},
        "modelBytes": 0,
        "modelWithoutCheckpointBytes": 0,
        "withoutCustomDataBytes": 0,
    }
    with closing(sqlite3.connect(paths.native / DB)) as conn:
        # The table's CHECK calls octet_length(), which an older SQLite than OpenClaw's lacks.
        conn.execute("PRAGMA ignore_check_constraints = ON")
        conn.execute(
            "UPDATE transcript_events SET event_json = NULL, event_zstd = x'28b52ffd', event_utf8_bytes = 4, "
            "navigation_json = ? WHERE seq = 0",
            (json.dumps(navigation),),
        )
        conn.commit()
    gaps = captured.gap_codes(normalize(paths.native))
    assert "transcript.event_unread" in gaps


def test_a_result_that_is_not_json_is_named(tmp_path: Path) -> None:
    paths = materialize("tool_success", tmp_path / "ep")
    (paths.native / ".openclaw-probe" / "result.json").write_bytes(gzip.compress(b"x")[:0] + b"{not json")
    assert "result.unreadable" in captured.gap_codes(normalize(paths.native))
