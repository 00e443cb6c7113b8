"""The Gemini CLI normalizer on captured real episodes: its chat recording and its OpenTelemetry file read into one
rollout, each fact's source named, the two records held to each other, and only its own files read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from orchestrator.checks import Status
from orchestrator.evidence import faults
from orchestrator.harnesses import NormalizeError, get_harness
from orchestrator.harnesses.gemini_cli.session import read_sessions
from tests.unit.harnesses.captured import (
    assert_replays_its_real_run,
    captured,
    fixtures,
    gap_codes,
    materialize,
    replay,
    witness,
)

CAPTURED = captured("gemini-cli")
TELEMETRY = Path(".gemini-probe/telemetry.log")


def _rollout(tmp_path: Path, name: str) -> tuple[Any, dict[str, Any]]:
    paths = materialize("gemini-cli", name, tmp_path / name)
    return paths, get_harness("gemini-cli").normalize(paths.native)  # type: ignore[return-value]


def test_captures_are_the_ones_named_in_their_readme() -> None:
    readme = (fixtures("gemini-cli") / "README.md").read_text()
    assert CAPTURED and all(f"`{name}`" in readme for name in CAPTURED)


@pytest.mark.parametrize("name", CAPTURED)
def test_normalizing_a_capture_again_gives_its_real_runs_checks(tmp_path: Path, name: str) -> None:
    assert_replays_its_real_run("gemini-cli", name, tmp_path / name)


@pytest.mark.parametrize("name", CAPTURED)
def test_every_capture_is_a_valid_rollout_naming_its_two_sources(tmp_path: Path, name: str) -> None:
    _, rollout = _rollout(tmp_path, name)
    assert [str(f) for f in faults(rollout, "probe-rollout/v1")] == []
    provenance = rollout["provenance"]
    assert set(provenance["sources"]) == {"session", "otel"}
    assert provenance["facts"][""] == "session" and provenance["facts"]["/model_calls"] == "otel"
    assert {c["protocol"] for c in rollout["model_calls"]} <= {"gemini"}


def test_tool_call_ids_are_the_providers_and_a_failed_commands_status_is_read(tmp_path: Path) -> None:
    paths, rollout = _rollout(tmp_path, "tool_failure")
    issued = [e["tool_call_id"] for e in witness(paths) if e["event"] == "tool_call"]
    assert [t["tool_call_id"] for t in rollout["tool_calls"]] == issued
    # Gemini CLI records each id as `<tool>__<the API's id>`: that is what its files hold.
    recorded = json.dumps([s.messages for s in read_sessions(paths.native / ".gemini")])
    assert all(f"run_shell_command__{i}" in recorded for i in issued)
    failed, ok = rollout["tool_calls"]
    assert (failed["status"], failed["exit_code"], ok["status"], ok["exit_code"]) == ("failed", 7, "succeeded", 0)
    assert "Exit Code: 7" in failed["output"]


def test_failed_attempts_and_their_status_come_from_the_telemetry(tmp_path: Path) -> None:
    _, rollout = _rollout(tmp_path, "retry_429")
    calls = rollout["model_calls"]
    assert [(c["status_code"], c["error_category"]) for c in calls[:2]] == [(429, "http_429")] * 2
    assert calls[0]["error"]["error"]["status"] == "RESOURCE_EXHAUSTED"
    assert all(c["response_id"] for c in calls[2:]) and rollout["provenance"]["retry_placement"] == "inferred"
    assert rollout["steps"][0]["model_call_refs"] == [c["model_call_id"] for c in calls[:3]]
    # Each reply's tokens are the chat recording's, and the telemetry says the same of each.
    corroborated = {e["fact"]: e for e in rollout["provenance"]["corroboration"]}
    for n in (2, 3, 4):
        entry = corroborated[f"/model_calls/{n}/token_stats"]
        assert entry["source"] == "otel" and entry["value"] == calls[n]["token_stats"]
        assert rollout["provenance"]["facts"][f"/model_calls/{n}/token_stats"] == "session"
    assert corroborated["/outcome/final_answer"]["value"] == "PROBE_DONE"


def test_a_reply_gemini_cli_threw_away_is_a_step_of_its_own(tmp_path: Path) -> None:
    # Its function call could not be parsed (MALFORMED_FUNCTION_CALL): Gemini CLI asked again and its chat recording
    # keeps no message of it. Paired with the next reply, every reply after it was one place off (tokens, tools).
    paths, rollout = _rollout(tmp_path, "tool_args_truncated")
    calls, steps = rollout["model_calls"], rollout["steps"]
    assert [c["finish_reason"] for c in calls] == ["MALFORMED_FUNCTION_CALL", "STOP", "STOP"]
    assert [s["model_call_refs"] for s in steps] == [[c["model_call_id"]] for c in calls]
    usage = [e["usage"] for e in witness(paths) if e["event"] == "attempt"]
    assert [c["token_stats"]["prompt"] for c in calls] == [u["prompt"] for u in usage]
    [tool] = rollout["tool_calls"]
    assert tool["step_no"] == 2  # the reply that issued it ended the second step, not the thrown-away first
    checks = replay(paths, rollout)
    assert {k: checks[k].status for k in ("steps.witness_attempts", "tokens.match")} == dict.fromkeys(
        ("steps.witness_attempts", "tokens.match"), Status.PASS
    )


def test_the_telemetrys_zeros_for_usage_never_sent_contradict_the_session(tmp_path: Path) -> None:
    paths, rollout = _rollout(tmp_path, "usage_omitted")
    assert all(v is None for c in rollout["model_calls"] for v in c["token_stats"].values())
    status, reasons = replay(paths, rollout)["sources.agree"].status, replay(paths, rollout)["sources.agree"].reasons
    assert status == Status.FAIL and "otel records {" in reasons[0] and '"prompt": 0' in reasons[0]


def test_without_its_telemetry_the_session_alone_gives_replies_and_names_the_gaps(tmp_path: Path) -> None:
    paths = materialize("gemini-cli", "retry_429", tmp_path / "retry_429")
    (paths.native / TELEMETRY).unlink()
    rollout = get_harness("gemini-cli").normalize(paths.native)
    assert [str(f) for f in faults(rollout, "probe-rollout/v1")] == []
    assert [c["status_code"] for c in rollout["model_calls"]] == [200, 200, 200]
    assert {"model_calls.failed_attempts_unrecorded", "model_calls.response_id_unrecorded"} <= set(gap_codes(rollout))
    assert rollout["provenance"]["sources"] == {"session": rollout["provenance"]["sources"]["session"]}
    assert "corroboration" not in rollout["provenance"]


def test_a_reply_whose_telemetry_was_lost_at_exit_comes_from_the_session_and_is_named(tmp_path: Path) -> None:
    name = next((n for n in CAPTURED if n.endswith("_otel_lost")), None)
    if name is None:
        pytest.skip("no capture lost its last telemetry")
    paths, rollout = _rollout(tmp_path, name)
    last = rollout["model_calls"][-1]
    assert last["response_id"] is None and last["status_code"] == 200 and last["completed_at"]
    facts = rollout["provenance"]["facts"]
    assert facts[f"/model_calls/{len(rollout['model_calls']) - 1}"] == "session"
    entry = next(e for e in rollout["provenance"]["corroboration"] if e["fact"].endswith("/completed_at"))
    assert entry == {
        "fact": f"/model_calls/{len(rollout['model_calls']) - 1}/completed_at",
        "source": "otel",
        "value": None,
    }
    assert replay(paths, rollout)["sources.agree"].status == Status.FAIL


def test_a_session_replays_updates_rewinds_and_resets_as_gemini_cli_loads_it(tmp_path: Path) -> None:
    chats = tmp_path / ".gemini" / "tmp" / "p" / "chats"
    chats.mkdir(parents=True)
    lines = [
        {"sessionId": "s", "projectHash": "h", "kind": "main"},
        {"id": "a", "type": "user", "content": "one"},
        {"id": "b", "type": "gemini", "content": ""},
        {"id": "b", "type": "gemini", "content": "two"},
        {"id": "c", "type": "user", "content": "three"},
        {"$rewindTo": "c"},
        {"$set": {"lastUpdated": "x"}},
        "not json {",
        {"id": "d", "type": "gemini", "content": "four"},
    ]
    (chats / "session-1.jsonl").write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines))
    (session,) = read_sessions(tmp_path / ".gemini")
    assert [(m["id"], m["content"]) for m in session.messages] == [("a", "one"), ("b", "two"), ("d", "four")]
    assert session.metadata["lastUpdated"] == "x" and session.kind == "main"
    assert len(session.problems) == 1 and "line 8" in session.problems[0]
    reset = {"$set": {"messages": [{"id": "z", "type": "user", "content": "only"}]}}
    (chats / "session-1.jsonl").write_text("\n".join(json.dumps(x) for x in [*lines[:5], reset]))
    assert [m["id"] for m in read_sessions(tmp_path / ".gemini")[0].messages] == ["z"]


def test_broken_or_missing_records_are_named_never_an_error(tmp_path: Path) -> None:
    paths = materialize("gemini-cli", "tool_failure", tmp_path / "t")
    (paths.native / TELEMETRY).write_text('{"resourceLogs": [}\n')
    rollout = get_harness("gemini-cli").normalize(paths.native)
    assert "native.telemetry_unreadable" in gap_codes(rollout)
    assert [str(f) for f in faults(rollout, "probe-rollout/v1")] == []
    shutil.rmtree(paths.native / ".gemini" / "tmp")
    (paths.native / TELEMETRY).unlink()
    with pytest.raises(NormalizeError, match="no chat recording"):
        get_harness("gemini-cli").normalize(paths.native)
