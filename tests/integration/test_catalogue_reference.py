"""The whole catalogue through real containers: the honest reference harness passes in every protocol mode,
and each misreporting mode is caught by exactly the checks it should fail."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from orchestrator.evidence import load_json
from orchestrator.scenarios import list_scenarios
from tests.integration.conftest import Images, hp, labelled

pytestmark = pytest.mark.docker

MODES = {
    "chat": [],
    "chat-stream": ["-a", "stream=true"],
    "responses-stream": ["-a", "protocol=responses", "-a", "stream=true"],
    "messages-stream": ["-a", "protocol=messages", "-a", "stream=true"],
    "gemini-stream": ["-a", "protocol=gemini", "-a", "stream=true"],
}


def _results(out: Path) -> dict[str, dict[str, Any]]:
    return {
        p.parent.name: load_json(p, "scenario-result/v1") for p in sorted(out.glob("reference/*/scenario_result.json"))
    }


def _own_failures(result: dict[str, Any]) -> set[str]:
    """Checks that failed on their own evidence (not `blocked by` another failure)."""
    return {c["id"] for c in result["checks"] if c["status"] == "fail" and not c["reasons"][0].startswith("blocked")}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_honest_reference_passes_the_whole_catalogue(images: Images, tmp_path: Path, mode: str) -> None:
    out = tmp_path / "out"
    res = hp("run", "-H", "reference", *MODES[mode], "-o", str(out), timeout=900)
    results = _results(out)
    assert sorted(results) == sorted(s.name for s in list_scenarios())
    failures = {name: _own_failures(r) for name, r in results.items() if r["verdict"] != "pass"}
    assert failures == {}, json.dumps(
        {n: [c for c in r["checks"] if c["status"] == "fail"] for n, r in results.items() if r["verdict"] != "pass"},
        indent=1,
    )[:4000]
    assert res.code == 0, res.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["full_suite"] is True and summary["exit_code"] == 0
    for kind in ("ps", "network", "volume"):
        assert labelled(kind, summary["run_id"]) == []


MISREPORTS = [
    ("drop_failed_attempt", "retry_429", {"attempts.multiset", "steps.witness_attempts", "errors.payload_retained"}),
    ("duplicate_attempt", "retry_429", {"attempts.multiset", "steps.witness_attempts"}),
    ("wrong_tokens", "tool_success", {"tokens.match"}),
    # The mode edits the history too: the model saw the true output on the wire (history.witness_results).
    ("alter_tool_output", "tool_success", {"tools.witness_output", "history.witness_results"}),
    ("drop_tool_record", "tool_success", {"tools.witness_ids"}),
    ("lost_ownership", "tool_success", {"ownership.call_owner", "steps.call_refs"}),
    ("wrong_answer_report", "tool_success", {"outcome.final_answer"}),
    # Catalogue II: one mode per new check, each failing exactly it.
    ("swallow_error", "model_error", {"error.propagated"}),
    ("wrong_wait", "retry_after", {"retry.wait_recorded"}),
    ("impatient", "retry_after", {"retry.waited"}),
    ("repair_arguments", "tool_args_truncated", {"tools.args_not_run"}),
    ("unmarked_turn", "tool_success", {"history.harness_authored"}),
    ("stream_mislabel", "tool_success", {"transport.parity"}),
]
# The run options a mode needs besides itself: its lie shows only beside the other transport's play.
MODE_ARGS = {"stream_mislabel": ["--compare-stream"]}
# A mode whose check is P1 fails no P0 gate: the run exits 0 although the check failed.
P1_ONLY = {"impatient", "unmarked_turn", "stream_mislabel"}


# Lies a protocol cannot carry: Gemini sends a function call whole or not at all (a call that does not parse is
# MALFORMED_FUNCTION_CALL, no call), so no cut-off arguments reach a harness to be repaired; tools.args_not_run is
# held on Gemini by the twin fixture's control (the never-sent call's marker among the collected ones).
NOT_ON = {("repair_arguments", "gemini")}
CASES = [
    pytest.param(mode, scenario, expected, protocol, id=f"{mode}-{protocol}")
    for mode, scenario, expected in MISREPORTS
    for protocol in ("chat", "gemini")
    if (mode, protocol) not in NOT_ON
]


@pytest.mark.parametrize(("mode", "scenario", "expected", "protocol"), CASES)
def test_misreporting_mode_fails_the_expected_checks(
    images: Images, tmp_path: Path, mode: str, scenario: str, expected: set[str], protocol: str
) -> None:
    out = tmp_path / "out"
    res = hp(
        "run",
        "-H",
        "reference",
        "-s",
        scenario,
        "-a",
        f"mode={mode}",
        "-a",
        f"protocol={protocol}",
        *MODE_ARGS.get(mode, []),
        "-o",
        str(out),
    )
    assert res.code == (0 if mode in P1_ONLY else 1), res.stdout[-3000:] + res.stderr[-2000:]
    result = _results(out)[scenario]
    assert result["execution"]["status"] == "exited"
    assert _own_failures(result) == expected


def test_the_honest_reference_plays_the_same_facts_over_either_transport(images: Images, tmp_path: Path) -> None:
    """`run --compare-stream`: each episode played again over SSE into twin/, the rollouts held to each other."""
    out = tmp_path / "out"
    scenarios = ("tool_success", "retry_429", "sse_malformed", "length_cut")
    res = hp("run", "-H", "reference", "--compare-stream", *(a for s in scenarios for a in ("-s", s)), "-o", str(out))
    assert res.code == 0, res.stdout[-3000:] + res.stderr[-2000:]
    results = _results(out)
    assert sorted(results) == sorted(scenarios)
    for name, result in results.items():
        parity = next(c for c in result["checks"] if c["id"] == "transport.parity")
        assert parity["status"] == "pass", (name, parity)
        twin = json.loads((out / "reference" / name / "twin" / "runtime.json").read_text())
        assert twin["launch"]["options"] == {"stream": "true"}
