"""Offline audits: re-check saved episodes (witness + rollout, or witness + native logs) with no Docker at all."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from orchestrator import __version__
from orchestrator.episode import now_iso, write_json
from orchestrator.evidence import Fault, FormatError, load_json, validate
from orchestrator.harnesses import Harness
from orchestrator.paths import EpisodePaths, RunPaths
from orchestrator.report import report_run
from orchestrator.report.summary import compact_result
from orchestrator.scenarios import list_scenarios
from orchestrator.suite import OutputExists
from orchestrator.verdict import collect_evidence, judge, normalize_native, read_rollout, result_skeleton

log = structlog.get_logger(__name__)

__all__ = ["AuditResult", "InputChanged", "audit", "find_episodes"]

# Evidence copied into the audit directory, so its summary hashes the same files the verdicts rest on.
_COPIED = (
    "witness.jsonl",
    "rollout.json",
    "runtime.json",
    "scenario.json",
    "harness.log",
    "proxy.log",
    "native",
    "markers",
)


class InputChanged(RuntimeError):
    """A source file changed while the audit read it: its verdicts would rest on nothing fixed."""


@dataclass
class AuditResult:
    output: Path
    results: list[dict[str, Any]]
    exit_code: int


def find_episodes(source: Path) -> list[tuple[str, str, Path]]:
    """(harness, scenario, dir) for every `<harness>/<scenario>/` holding a scenario.json and a witness."""
    found = []
    for scenario_file in sorted(source.glob("*/*/scenario.json")):
        ep = scenario_file.parent
        if (ep / "witness.jsonl").is_file() or (ep / "rollout.json").is_file():
            found.append((ep.parent.name, ep.name, ep))
    return found


def _hash_tree(root: Path) -> dict[str, str]:
    # os.walk on strings: a rollout of 100,000 calls leaves as many marker files, and pathlib's per-path
    # objects and relative_to() cost more than hashing them.
    digests = {}
    base = str(root)
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames.sort()
        rel_dir = os.path.relpath(dirpath, base).replace(os.sep, "/")
        for name in filenames:
            full = os.path.join(dirpath, name)
            if not os.path.isfile(full):
                continue
            h = hashlib.sha256()
            with open(full, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
            digests[name if rel_dir == "." else f"{rel_dir}/{name}"] = h.hexdigest()
    return dict(sorted(digests.items()))


def _copy(src: Path, dest: Path) -> None:
    dest.mkdir(parents=True)
    for name in _COPIED:
        s = src / name
        if s.is_dir():
            shutil.copytree(s, dest / name)
        elif s.is_file():
            shutil.copy2(s, dest / name)


def _suite(source: Path, episodes: list[tuple[str, str, Path]]) -> dict[str, Any]:
    path = RunPaths(source).suite
    if path.is_file():
        suite: dict[str, Any] = load_json(path, "suite/v1")
        return suite
    # A bare collection of witness + rollout pairs: describe it as a run of its own.
    harnesses = sorted({h for h, _, _ in episodes})
    scenarios: dict[str, str] = {}
    for _, s, ep in episodes:
        scenarios.setdefault(s, hashlib.sha256((ep / "scenario.json").read_bytes()).hexdigest())
    return {
        "schema": "suite/v1",
        "run_id": f"audit-{hashlib.sha256(str(source.resolve()).encode()).hexdigest()[:12]}",
        "started_at": now_iso(),
        "tool_version": __version__,
        "harnesses": [{"name": h, "options": {}} for h in harnesses],
        "scenarios": [{"name": n, "sha256": d} for n, d in sorted(scenarios.items())],
        "images": {},
        "inputs": {},
    }


def _audit_episode(
    harness_name: str, scenario_name: str, src: Path, dest: EpisodePaths, suite: dict[str, Any], harness: Harness | None
) -> dict[str, Any]:
    _copy(src, dest.root)
    old: dict[str, Any] | None = None
    if (src / "scenario_result.json").is_file():
        old = load_json(src / "scenario_result.json", "scenario-result/v1")
    execution = (
        old["execution"]
        if old
        else {"status": "unknown", "exit_code": None, "seconds": 0.0, "timeout_seconds": 0.0, "error": None}
    )
    result = result_skeleton(
        harness_name,
        scenario_name,
        suite["run_id"],
        old["episode_id"] if old else f"audit-{harness_name}-{scenario_name}",
        old["started_at"] if old else now_iso(),
        execution,
    )
    try:
        scenario = load_json(dest.scenario, "probe-scenario/v1")
        if harness is not None:
            rollout, result["normalize"] = normalize_native(harness, dest.native)
            if rollout is not None:
                write_json(dest.rollout, rollout)
            why = result["normalize"]["message"]
        else:
            rollout, why = read_rollout(dest.rollout)
            result["normalize"] = old["normalize"] if old else {"status": "skipped", "message": None}
        judge(result, scenario, collect_evidence(scenario, dest, rollout, why))
    except Exception as exc:  # one broken episode is reported as an error; the others are still audited
        result["execution"] = {**execution, "status": "error", "error": f"audit failed: {type(exc).__name__}: {exc}"}
        result["verdict"] = "error"
        (dest.root / "audit-error.txt").write_text(traceback.format_exc())
    result["finished_at"] = old["finished_at"] if old else now_iso()
    validate(result, "scenario-result/v1", "scenario_result")
    write_json(dest.result, result)
    return result


def audit(source: Path, output: Path, harness: Harness | None = None) -> AuditResult:
    """Re-check every saved episode under `source` into the new directory `output`, then write the reports."""
    if output.exists():
        raise OutputExists(f"output directory {output} already exists; choose a new one (results are never mixed)")
    episodes = find_episodes(source)
    if not episodes:
        raise FormatError(str(source), [Fault("$", "no episodes found (expected <harness>/<scenario>/scenario.json)")])
    before = _hash_tree(source)
    suite = _suite(source, episodes)
    output.mkdir(parents=True)
    started = now_iso()
    write_json(RunPaths(output).suite, suite)
    results = []
    shared: dict[str, Any] = {}  # identical check records across episodes, kept once (memory flat in episodes)
    for h, s, ep in episodes:
        if harness is not None and harness.name != h:
            log.warning("episode of another harness audited with --harness", episode=f"{h}/{s}", harness=harness.name)
        log.info("auditing", harness=h, scenario=s)
        result = _audit_episode(h, s, ep, RunPaths(output).episode(h, s), suite, harness)
        results.append(compact_result(result, shared))
    after = _hash_tree(source)
    if before != after:
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        raise InputChanged(f"input files changed during the audit: {', '.join(changed[:10])}")
    old_summary = source / "summary.json"
    if old_summary.is_file():
        full_suite = bool(json.loads(old_summary.read_text()).get("full_suite"))
    else:
        full_suite = {s for _, s, _ in episodes} >= {s.name for s in list_scenarios()}
    record = {
        "schema": "audit/v1",
        "source": str(source.resolve()),
        "harness": harness.name if harness else None,
        "inputs": before,
    }
    validate(record, "audit/v1", "audit.json")
    write_json(output / "audit.json", record)
    code = report_run(output, suite, results, full_suite=full_suite, started_at=started, finished_at=now_iso())
    return AuditResult(output, results, code)
