"""A realistic finished run on disk: suite.json, two harnesses, pass / fail / error / skipped episodes."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from orchestrator.evidence import validate

RUN_ID = "20250101T120000-abc123"
# A reason with markup, an ampersand and a terminal escape, as harness output really contains.
NASTY = 'tool call call_2: output "<script>alert(1)</script> & \x1b[31mred\x1b[0m" is not the witnessed output'

# One check of each kind, a P1 check, and a dependent check: the shapes the report must group and count.
CHECKS: list[dict[str, Any]] = [
    {"id": "rollout.schema", "kind": "schema", "tier": "P0", "evidence": ["E3"], "location": "$"},
    {
        "id": "calls.outcome",
        "kind": "semantic",
        "tier": "P0",
        "evidence": ["E1"],
        "location": "$.model_calls[*]",
    },
    {
        "id": "witness.tools_executed",
        "kind": "behavioral",
        "tier": "P0",
        "evidence": ["E5"],
        "location": "$[?(@.event=='marker')]",
    },
    {
        "id": "tools.witness_output",
        "kind": "behavioral",
        "tier": "P0",
        "evidence": ["E5"],
        "location": "$.tool_calls[*].output",
    },
    {
        "id": "outcome.final_answer",
        "kind": "behavioral",
        "tier": "P0",
        "evidence": ["E6"],
        "location": "$.outcome.final_answer",
    },
    {
        "id": "witness.no_egress",
        "kind": "behavioral",
        "tier": "P1",
        "evidence": ["E10"],
        "location": "$[?(@.event=='egress')]",
    },
    {"id": "process.exit_status", "kind": "process", "tier": "P1", "evidence": [], "location": "$.execution.exit_code"},
]


def checks(**statuses: tuple[str, list[str]]) -> list[dict[str, Any]]:
    """Every check passing, except those named (dots as `__`) with their status and reasons."""
    out = []
    for c in CHECKS:
        status, reasons = statuses.get(c["id"].replace(".", "__"), ("pass", []))
        out.append({**c, "evidence": list(c["evidence"]), "status": status, "reasons": list(reasons)})
    return out


def result(
    harness: str,
    scenario: str,
    verdict: str,
    check_list: list[dict[str, Any]],
    *,
    execution: dict[str, Any] | None = None,
    normalize: dict[str, Any] | None = None,
    run_id: str = RUN_ID,
) -> dict[str, Any]:
    p0 = all(c["status"] != "fail" for c in check_list if c["tier"] == "P0")
    p1 = all(c["status"] != "fail" for c in check_list if c["tier"] == "P1")
    r: dict[str, Any] = {
        "schema": "scenario-result/v1",
        "profile": "probe-p0/v1",
        "harness": harness,
        "scenario": scenario,
        "run_id": run_id,
        "episode_id": f"hp-{run_id}-{harness[:3]}{scenario[:3]}",
        "started_at": "2025-01-01T12:00:05.000Z",
        "finished_at": "2025-01-01T12:00:17.250Z",
        "execution": execution
        or {"status": "exited", "exit_code": 0, "seconds": 12.25, "timeout_seconds": 300, "error": None},
        "normalize": normalize or {"status": "ok", "message": None},
        "inputs_unavailable": {},
        "checks": check_list,
        "gate": {"P0": p0, "P1": p1} if check_list else {"P0": False},
        "verdict": verdict,
    }
    validate(r, "scenario-result/v1")
    return r


def make_results() -> list[dict[str, Any]]:
    error = result(
        "hermes",
        "tool_success",
        "error",
        checks(
            calls__outcome=("fail", ["required input unavailable: rollout: no native logs were collected"]),
            tools__witness_output=("fail", ["blocked by calls.outcome"]),
            outcome__final_answer=(
                "fail",
                ["required input unavailable: rollout: no native logs were collected"],
            ),
        ),
        execution={
            "status": "error",
            "exit_code": None,
            "seconds": 0,
            "timeout_seconds": 300,
            "error": "APIError: 500 Server Error: network create failed",
        },
        normalize={"status": "error", "message": "no native logs were collected"},
    )
    error["inputs_unavailable"] = {"rollout": "no native logs were collected"}
    return [
        result("reference", "tool_success", "pass", checks(witness__no_egress=("not_applicable", []))),
        result(
            "reference",
            "tool_failure",
            "fail",
            checks(
                tools__witness_output=("fail", [NASTY, "second reason & more"]),
                process__exit_status=("not_applicable", []),
            ),
            execution={
                "status": "timeout",
                "exit_code": None,
                "seconds": 300,
                "timeout_seconds": 300,
                "error": None,
            },
        ),
        error,
        result(
            "hermes",
            "tool_failure",
            "skipped",
            [],
            execution={
                "status": "skipped",
                "exit_code": None,
                "seconds": 0,
                "timeout_seconds": 300,
                "error": "hermes has no shell tool exit codes",
            },
            normalize={"status": "skipped", "message": None},
        ),
    ]


def make_suite(harnesses: list[str], scenarios: list[str], run_id: str = RUN_ID) -> dict[str, Any]:
    suite = {
        "schema": "suite/v1",
        "run_id": run_id,
        "started_at": "2025-01-01T12:00:00.000Z",
        "tool_version": "0.1.0",
        "harnesses": [{"name": h, "options": {"model": "probe-model"} if h == "hermes" else {}} for h in harnesses],
        "scenarios": [{"name": s, "sha256": f"{i:x}" * 64} for i, s in enumerate(scenarios, start=1)],
        "images": {
            "proxy": {
                "tag": "harness-probe/proxy:abc",
                "image_id": "sha256:" + "a" * 64,
                "inputs_sha256": "b" * 64,
            }
        },
        "inputs": {f"scenarios/{s}.yaml": f"{i:x}" * 64 for i, s in enumerate(scenarios, start=1)},
        "timeout_seconds": 300,
    }
    validate(suite, "suite/v1")
    return suite


@dataclass
class Run:
    dir: Path
    suite: dict[str, Any]
    results: list[dict[str, Any]]


def write_run(run_dir: Path, suite: dict[str, Any], results: list[dict[str, Any]]) -> Run:
    """Lay out the run like the orchestrator: no rollout for the error episode, only a result if skipped."""
    run_dir.mkdir(parents=True)
    (run_dir / "suite.json").write_text(json.dumps(suite, indent=2))
    for r in results:
        ep = run_dir / r["harness"] / r["scenario"]
        ep.mkdir(parents=True)
        (ep / "scenario_result.json").write_text(json.dumps(r, indent=2))
        if r["verdict"] == "skipped":
            continue
        (ep / "runtime.json").write_text(json.dumps({"schema": "runtime/v1", "harness": r["harness"]}))
        (ep / "witness.jsonl").write_text(json.dumps({"event": "end", "scenario": r["scenario"]}) + "\n")
        if r["normalize"]["status"] == "ok":
            (ep / "rollout.json").write_text(json.dumps({"task_id": r["scenario"], "harness": r["harness"]}))
    return Run(run_dir, suite, results)


@pytest.fixture
def run(tmp_path: Path) -> Run:
    return write_run(
        tmp_path / "run",
        make_suite(["reference", "hermes"], ["tool_success", "tool_failure"]),
        make_results(),
    )
