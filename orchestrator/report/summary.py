"""The run summary (probe-summary/v1): every episode's checks, the verdict, its exit code, input hashes."""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from orchestrator import __version__
from orchestrator.checks import PROFILE
from orchestrator.evidence import validate
from orchestrator.paths import RunPaths

__all__ = [
    "EVIDENCE_FILES",
    "EXIT_CODES",
    "SUMMARY_FORMAT",
    "TIMESTAMPS",
    "build_summary",
    "compact_result",
    "summary_bytes",
    "without_timestamps",
]

SUMMARY_FORMAT = "probe-summary/v1"
EVIDENCE_FILES = ("witness.jsonl", "rollout.json", "scenario_result.json", "runtime.json")
# The one key under which every wall-clock time lives, so an audit can drop it and compare the rest.
TIMESTAMPS = "timestamps"
EXIT_CODES = {"pass": 0, "fail": 1, "error": 2}
CHECKER_ERROR = "checker error:"  # the prefix run_checks gives a check whose function crashed
_SEVERITY = {"error": 3, "fail": 2, "pass": 1, "skipped": 0}


def _sha256(path: Path) -> str | None:
    if not path.is_file():
        return None
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _first_failure(result: dict[str, Any]) -> dict[str, str] | None:
    if result["verdict"] == "error":
        execution, normalize = result["execution"], result["normalize"]
        reason = execution["error"] or normalize["message"] or f"execution status {execution['status']}"
        return {"source": "execution", "reason": reason}
    failed = [c for c in result["checks"] if c["status"] == "fail"]
    # A P0 failure is what decides the verdict, so it is the one to show first.
    failed.sort(key=lambda c: c["tier"] != "P0")
    if not failed:
        return None
    reasons = failed[0]["reasons"]
    return {"source": failed[0]["id"], "reason": reasons[0] if reasons else "failed (no reason given)"}


def _episode(paths: RunPaths, result: dict[str, Any]) -> dict[str, Any]:
    root = paths.episode(result["harness"], result["scenario"]).root
    return {
        "scenario": result["scenario"],
        "episode_id": result["episode_id"],
        "verdict": result["verdict"],
        "gate": dict(result["gate"]),
        "execution": dict(result["execution"]),
        "normalize": dict(result["normalize"]),
        "inputs_unavailable": dict(result.get("inputs_unavailable", {})),
        # Shared, not copied: check records are never mutated after judging, and an audit of many episodes
        # interns identical ones (`compact_result`), which a copy per episode would undo.
        "checks": list(result["checks"]),
        "first_failure": _first_failure(result),
        "evidence": {name: _sha256(root / name) for name in EVIDENCE_FILES},
        TIMESTAMPS: {"started_at": result["started_at"], "finished_at": result["finished_at"]},
    }


def compact_result(result: dict[str, Any], table: dict[str, Any]) -> dict[str, Any]:
    """`result` with every check record replaced by an equal one shared through `table`.

    Honest episodes have identical check records, so a run or audit of thousands keeps each distinct record once:
    memory grows with what differs between episodes (their reasons), not with their number.
    """
    shared = []
    for c in result["checks"]:
        key = json.dumps(c, sort_keys=True)
        shared.append(table.setdefault(key, c))
    return {**result, "checks": shared}


def _worst(verdicts: Iterable[str]) -> str:
    return max(verdicts, key=_SEVERITY.__getitem__, default="skipped")


def _errors(suite: dict[str, Any], results: list[dict[str, Any]], missing: list[dict[str, str]]) -> list[str]:
    errors: list[str] = []
    # A merged directory holds the episodes of the runs it names; any other run id is foreign evidence.
    run_ids = {suite["run_id"]} | {m["run_id"] for m in suite.get("merged_from", [])}
    if not results and not missing:
        errors.append("no episode was run")
    for r in results:
        where = f"{r['harness']}/{r['scenario']}"
        if r["run_id"] not in run_ids:
            errors.append(f"{where}: run_id {r['run_id']!r} is not the suite's {suite['run_id']!r}")
        if r["profile"] != PROFILE:
            errors.append(f"{where}: checked against profile {r['profile']!r}, not {PROFILE!r}")
        if r["verdict"] == "error":
            reason = _first_failure(r)
            errors.append(f"{where}: episode error: {reason['reason'] if reason else 'unknown'}")
        for c in r["checks"]:
            # A crashing check is recorded as its failure, but it is a bug of ours, not the harness's finding.
            if any(reason.startswith(CHECKER_ERROR) for reason in c["reasons"]):
                errors.append(f"{where}: {c['id']}: {CHECKER_ERROR} see its reasons")
    errors.extend(f"{m['harness']}/{m['scenario']}: no scenario_result (episode missing)" for m in missing)
    return errors


def build_summary(
    run_dir: Path,
    suite: dict[str, Any],
    results: list[dict[str, Any]],
    full_suite: bool,
    started_at: str,
    finished_at: str,
) -> dict[str, Any]:
    """Build summary.json's content from suite.json, every scenario_result and the evidence files in run_dir.

    Raises FormatError when suite or a result is not valid, ValueError when an episode appears twice.
    """
    validate(suite, "suite/v1", "suite.json")
    for r in results:
        validate(r, "scenario-result/v1", f"scenario_result of {r.get('harness')}/{r.get('scenario')}")
    # Sorted by name, never by run order: the same inputs give the same bytes whatever order they came in.
    ordered = sorted(results, key=lambda r: (r["harness"], r["scenario"]))
    seen: set[tuple[str, str]] = set()
    for r in ordered:
        key = (r["harness"], r["scenario"])
        if key in seen:
            raise ValueError(f"two scenario_results for {key[0]}/{key[1]}")
        seen.add(key)
    if "episodes" in suite:
        expected = {(e["harness"], e["scenario"]) for e in suite["episodes"]}
    else:
        expected = {(h["name"], s["name"]) for h in suite["harnesses"] for s in suite["scenarios"]}
    missing = [{"harness": h, "scenario": s} for h, s in sorted(expected - seen)]
    options = {h["name"]: dict(h["options"]) for h in suite["harnesses"]}

    paths = RunPaths(run_dir)
    harnesses: list[dict[str, Any]] = []
    for r in ordered:
        if not harnesses or harnesses[-1]["name"] != r["harness"]:
            harnesses.append(
                {
                    "name": r["harness"],
                    "options": options.get(r["harness"], {}),
                    "verdict": "",
                    "scenarios": [],
                }
            )
        harnesses[-1]["scenarios"].append(_episode(paths, r))
    for h in harnesses:
        h["verdict"] = _worst(e["verdict"] for e in h["scenarios"])

    errors = _errors(suite, ordered, missing)
    verdicts = [r["verdict"] for r in ordered]
    verdict = "error" if errors else "fail" if "fail" in verdicts else "pass"
    summary: dict[str, Any] = {
        "schema": SUMMARY_FORMAT,
        "profile": PROFILE,
        "run_id": suite["run_id"],
        "tool_version": __version__,
        "full_suite": full_suite,
        TIMESTAMPS: {"started_at": started_at, "finished_at": finished_at},
        "verdict": verdict,
        "exit_code": EXIT_CODES[verdict],
        "errors": errors,
        "counts": {
            "episodes": len(ordered),
            **{v: verdicts.count(v) for v in ("pass", "fail", "error", "skipped")},
        },
        "inputs": {
            "suite_json": _sha256(paths.suite),
            "files": dict(suite["inputs"]),
            "images": copy.deepcopy(suite["images"]),
        },
        "missing": missing,
        "harnesses": harnesses,
    }
    validate(summary, SUMMARY_FORMAT, "summary")
    return summary


def summary_bytes(summary: dict[str, Any]) -> bytes:
    """The exact bytes of summary.json: sorted keys and ASCII only, so equal content means equal bytes."""
    # ensure_ascii also keeps lone surrogates from harness output encodable.
    return (json.dumps(summary, indent=2, sort_keys=True, ensure_ascii=True) + "\n").encode("ascii")


def without_timestamps(summary: dict[str, Any]) -> dict[str, Any]:
    """A copy without the `timestamps` fields: what two builds from the same inputs must share."""
    out = copy.deepcopy(summary)
    out.pop(TIMESTAMPS, None)
    for h in out.get("harnesses", []):
        for e in h.get("scenarios", []):
            e.pop(TIMESTAMPS, None)
    return out
