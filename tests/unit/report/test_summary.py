"""summary.json: valid against its hand-written schema, the exit code rules, byte-for-byte reproducible."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from orchestrator.evidence import FormatError, schema_path, validate
from orchestrator.report import build_summary, summary_bytes, without_timestamps
from tests.unit.report.conftest import NASTY, RUN_ID, Run, checks, make_suite, result, write_run

T0, T1 = "2025-01-01T12:00:00.000Z", "2025-01-01T12:30:00.000Z"


def summarize(run: Run, **kw: Any) -> dict[str, Any]:
    args: dict[str, Any] = {"full_suite": True, "started_at": T0, "finished_at": T1, **kw}
    return build_summary(run.dir, run.suite, run.results, **args)


def _undescribed(node: Any, path: str) -> list[str]:
    """Every subschema under properties / items / $defs / additionalProperties must say what it is."""
    out: list[str] = []
    if not isinstance(node, dict):
        return out
    children: list[tuple[str, Any]] = []
    for key in ("properties", "$defs"):
        children += [(f"{path}.{key}.{k}", v) for k, v in node.get(key, {}).items()]
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            children.append((f"{path}.{key}", node[key]))
    for key in ("oneOf", "anyOf"):
        children += [(f"{path}.{key}[{i}]", v) for i, v in enumerate(node.get(key, []))]
    for child_path, child in children:
        if "description" not in child:
            out.append(child_path)
        out += _undescribed(child, child_path)
    return out


def test_schema_describes_every_field() -> None:
    schema = json.loads(schema_path("probe-summary/v1").read_text())
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert _undescribed(schema, "$") == []


def test_summary_validates_and_holds_the_run(run: Run) -> None:
    s = summarize(run)
    validate(s, "probe-summary/v1")
    assert (s["schema"], s["profile"], s["run_id"], s["full_suite"]) == (
        "probe-summary/v1",
        "probe-p0/v1",
        RUN_ID,
        True,
    )
    assert s["timestamps"] == {"started_at": T0, "finished_at": T1}
    assert [h["name"] for h in s["harnesses"]] == ["hermes", "reference"]
    assert [e["scenario"] for e in s["harnesses"][1]["scenarios"]] == ["tool_failure", "tool_success"]
    assert s["counts"] == {"episodes": 4, "pass": 1, "fail": 1, "error": 1, "skipped": 1}
    assert s["harnesses"][0]["options"] == {"model": "probe-model"}
    assert [h["verdict"] for h in s["harnesses"]] == ["error", "fail"]
    fail = s["harnesses"][1]["scenarios"][0]
    assert fail["first_failure"] == {"source": "tools.witness_output", "reason": NASTY}
    out = next(c for c in fail["checks"] if c["id"] == "tools.witness_output")
    assert out["reasons"] == [NASTY, "second reason & more"]


def test_inputs_and_evidence_hashes(run: Run) -> None:
    import hashlib

    s = summarize(run)
    assert s["inputs"]["files"] == run.suite["inputs"]
    assert s["inputs"]["images"] == run.suite["images"]
    assert s["inputs"]["suite_json"] == hashlib.sha256((run.dir / "suite.json").read_bytes()).hexdigest()
    hermes = {e["scenario"]: e["evidence"] for e in s["harnesses"][0]["scenarios"]}
    ref = {e["scenario"]: e["evidence"] for e in s["harnesses"][1]["scenarios"]}
    digest = hashlib.sha256((run.dir / "reference/tool_success/rollout.json").read_bytes()).hexdigest()
    assert ref["tool_success"]["rollout.json"] == digest
    assert all(ref["tool_success"].values())
    # As found on disk: the error episode has no rollout, the skipped one nothing but its result.
    assert hermes["tool_success"]["rollout.json"] is None and hermes["tool_success"]["witness.jsonl"]
    assert [k for k, v in hermes["tool_failure"].items() if v] == ["scenario_result.json"]


def _run(tmp_path: Path, results: list[dict[str, Any]], scenarios: list[str] | None = None) -> Run:
    harnesses = sorted({r["harness"] for r in results}) or ["reference"]
    names = scenarios if scenarios is not None else sorted({r["scenario"] for r in results})
    return write_run(tmp_path / "run", make_suite(harnesses, names), results)


PASS = result("reference", "a", "pass", checks())
FAIL = result("reference", "b", "fail", checks(calls__outcome=("fail", ["attempt 2 missing"])))
P1_FAIL = result("reference", "c", "pass", checks(witness__no_egress=("fail", ["looked up telemetry.example"])))
SKIP = result(
    "reference",
    "d",
    "skipped",
    [],
    execution={"status": "skipped", "exit_code": None, "seconds": 0, "timeout_seconds": 300, "error": "n/a"},
    normalize={"status": "skipped", "message": None},
)
ERROR = result(
    "reference",
    "e",
    "error",
    checks(),
    execution={"status": "error", "exit_code": None, "seconds": 0, "timeout_seconds": 300, "error": "boom"},
)
CRASH = result("reference", "f", "fail", checks(calls__outcome=("fail", ["checker error: KeyError: 'x'"])))


@pytest.mark.parametrize(
    ("results", "code", "verdict"),
    [
        ([PASS], 0, "pass"),
        ([PASS, P1_FAIL], 0, "pass"),  # the gate is P0: a P1 finding is reported, not fatal
        ([PASS, SKIP], 0, "pass"),  # skipped episodes don't fail the run
        ([SKIP], 0, "pass"),
        ([PASS, FAIL], 1, "fail"),
        ([PASS, FAIL, ERROR], 2, "error"),
        ([ERROR, SKIP], 2, "error"),
        ([PASS, CRASH], 2, "error"),  # a crashing check is our bug: an error, not a finding
        ([], 2, "error"),  # a run that ran nothing certifies nothing
    ],
    ids=[
        "pass",
        "p1-fail",
        "pass+skip",
        "all-skipped",
        "fail",
        "error",
        "error+skip",
        "checker-crash",
        "empty",
    ],
)
def test_exit_code(tmp_path: Path, results: list[dict[str, Any]], code: int, verdict: str) -> None:
    s = summarize(_run(tmp_path, results))
    assert (s["exit_code"], s["verdict"]) == (code, verdict)
    assert bool(s["errors"]) == (code == 2)


def test_missing_episode_is_an_error(tmp_path: Path) -> None:
    s = summarize(_run(tmp_path, [PASS], scenarios=["a", "z"]))
    assert s["exit_code"] == 2
    assert s["missing"] == [{"harness": "reference", "scenario": "z"}]
    assert s["errors"] == ["reference/z: no scenario_result (episode missing)"]


def test_foreign_run_id_is_an_error(tmp_path: Path) -> None:
    other = result("reference", "a", "pass", checks(), run_id="other-run")
    s = summarize(_run(tmp_path, [other]))
    assert s["exit_code"] == 2 and "run_id 'other-run'" in s["errors"][0]


def test_invalid_inputs_are_refused(run: Run) -> None:
    broken = [dict(run.results[0], verdict="maybe"), *run.results[1:]]
    with pytest.raises(FormatError, match=r"\$\.verdict"):
        build_summary(run.dir, run.suite, broken, True, T0, T1)
    with pytest.raises(ValueError, match="two scenario_results for reference/tool_success"):
        build_summary(run.dir, run.suite, [*run.results, run.results[0]], True, T0, T1)


def test_same_inputs_give_the_same_bytes(run: Run) -> None:
    a = summarize(run)
    shuffled = list(run.results)
    random.Random(7).shuffle(shuffled)
    b = build_summary(run.dir, run.suite, shuffled, True, "2026-06-01T00:00:00.000Z", "2026-06-01T01:00:00.000Z")
    assert summary_bytes(a) != summary_bytes(b)
    assert summary_bytes(without_timestamps(a)) == summary_bytes(without_timestamps(b))
    # The only lines that differ are the run's own timestamps, in the field named for them.
    diff = [(x, y) for x, y in zip(summary_bytes(a).splitlines(), summary_bytes(b).splitlines(), strict=True) if x != y]
    assert len(diff) == 2 and all(b'"started_at"' in x or b'"finished_at"' in x for x, _ in diff)
    # Episode timestamps live under `timestamps` too, so an audit drops them with one rule.
    assert "timestamps" not in json.dumps(without_timestamps(a))
