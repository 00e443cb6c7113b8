"""Bodies the witness keeps as size and sha256 only (past its byte budget): unavailable to every content check."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from orchestrator.checks import Evidence, Status, Witness
from orchestrator.checks.evidence import WITHHELD, read_witness
from orchestrator.checks.tools import witness_output
from tests.unit.checks.conftest import Episode, load_episode


def _withhold(event: dict[str, Any], field: str) -> None:
    raw = json.dumps(event[field]).encode()
    event[field] = None
    event[f"{field}_withheld"] = {"size": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}


def _events(ep: Episode, kind: str) -> list[dict[str, Any]]:
    return [e for e in ep.witness if e["event"] == kind]


def _budget_note(ep: Episode) -> None:
    ep.add_event({"event": "violation", "attempt_id": None, "code": "witness_budget", "detail": "budget reached"})


def test_withheld_results_fail_the_output_checks_as_unavailable() -> None:
    ep = load_episode("tool_success")
    assert ep.evaluate()["tools.witness_output"][0] == Status.PASS
    for seen in _events(ep, "tool_result_seen"):
        _withhold(seen, "output")
    results = ep.evaluate()
    for check_id in ("tools.witness_output", "history.witness_results"):
        status, reasons = results[check_id]
        assert status == Status.FAIL and reasons and all(WITHHELD in r for r in reasons), (check_id, reasons)
    # What the proxy saw with the whole body is still judged: the token was in the result.
    assert results["witness.results_seen"][0] == Status.PASS


def test_a_null_output_never_matches_a_withheld_one() -> None:
    ep = load_episode("tool_success")
    for seen in _events(ep, "tool_result_seen"):
        _withhold(seen, "output")
    for tool in ep.rollout["tool_calls"]:
        tool["output"] = None  # null == null would read as "as the model saw it"
    assert ep.evaluate()["tools.witness_output"][0] == Status.FAIL  # blocked by tools.record, or failed on its own
    ev = Evidence(ep.scenario, rollout=ep.rollout, witness=Witness(ep.witness), markers=ep.markers)
    reasons = witness_output(ev)  # the check itself, past its dependency
    assert reasons and all(WITHHELD in r for r in reasons), reasons


def test_the_budget_note_is_a_named_violation() -> None:
    ep = load_episode("tool_success")
    _budget_note(ep)
    status, reasons = ep.evaluate()["witness.no_violations"]
    assert status == Status.FAIL and reasons == ["witness_budget: budget reached"]


def test_a_recorded_request_against_a_withheld_one_is_unavailable_not_a_lie() -> None:
    ep = load_episode("tool_success")
    attempt = next(a for a in _events(ep, "attempt") if a["kind"] == "model")
    call = ep.rollout["model_calls"][0]
    call["request"] = attempt["request"]
    assert ep.evaluate()["attempts.exchange"][0] == Status.PASS
    _withhold(attempt, "request")
    status, reasons = ep.evaluate()["attempts.exchange"]
    assert status == Status.FAIL and len(reasons) == 1 and WITHHELD in reasons[0], reasons


def test_a_retry_compared_with_a_withheld_request() -> None:
    ep = load_episode("retry_429")
    assert ep.evaluate()["attempts.retry_identical"][0] == Status.PASS
    first = next(a for a in _events(ep, "attempt") if a["kind"] == "model")
    _withhold(first, "request")
    status, reasons = ep.evaluate()["attempts.retry_identical"]
    assert status == Status.FAIL and reasons and all(WITHHELD in r for r in reasons), reasons
    # Both withheld with the same hash of the bytes sent: the very same body, which is a real match.
    models = [a for a in _events(ep, "attempt") if a["kind"] == "model"]
    for a in models[1:]:
        _withhold(a, "request")
        a["request_sha256"] = first["request_sha256"]
    assert ep.evaluate()["attempts.retry_identical"][0] == Status.PASS


def test_a_witness_with_withheld_bodies_is_valid(tmp_path: Path) -> None:
    ep = load_episode("tool_success")
    _budget_note(ep)
    for a in _events(ep, "attempt"):
        if a.get("request") is not None:
            _withhold(a, "request")
    for seen in _events(ep, "tool_result_seen"):
        _withhold(seen, "output")
    path = tmp_path / "witness.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in ep.witness))
    witness = read_witness(path)
    assert any("request_withheld" in e for e in witness.events)
