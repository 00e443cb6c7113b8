"""From collected evidence to a verdict: normalize native logs, read the witness, run the checks, build the result."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, cast

import structlog

from orchestrator.checks import PROFILE, Evidence, Status, gate, read_witness, run_checks, scope_of
from orchestrator.evidence import FormatError
from orchestrator.evidence.compact import Held, hold_rollout
from orchestrator.evidence.jsonread import MAX_FILE_BYTES, JsonFault, read_json
from orchestrator.evidence.markers import MARKERS_FILE, read_folder, read_markers
from orchestrator.evidence.numbers import integral_as_int
from orchestrator.harnesses import Harness, NormalizeError
from orchestrator.harnesses.isolated import NormalizeBudget, Normalizer, normalize_isolated
from orchestrator.paths import EpisodePaths
from orchestrator.records import NormalizeRecord, Rollout

log = structlog.get_logger(__name__)

# The verdict and execution status of an episode the run's stop cut short.
INTERRUPTED = "interrupted"

__all__ = [
    "INTERRUPTED",
    "attach_twin",
    "collect_evidence",
    "interrupted_result",
    "judge",
    "keep_unjudged",
    "normalize_native",
]


def normalize_native(
    harness: Harness, native: Path, budget: NormalizeBudget | None = None, child: Normalizer | None = None
) -> tuple[Rollout | None, NormalizeRecord]:
    """native/ -> rollout dict and the normalize record. A schema-invalid rollout is kept: the checks judge it.

    The normalizer runs in a child process under a time and memory budget: it reads what the harness wrote.
    `child`: one started ahead for this harness (its budget then is its own).
    """
    if not native.is_dir():
        return None, {"status": "error", "message": "no native logs were collected"}
    try:
        rollout = child.run(native) if child is not None else normalize_isolated(harness, native, budget)
    except NormalizeError as exc:
        return None, {"status": "error", "message": str(exc)}
    return rollout, {"status": "ok", "message": None}


def read_rollout(path: Path) -> tuple[Rollout | None, str | None]:
    try:
        data = read_json(path)
    except FileNotFoundError:
        return None, f"{path.name} does not exist"
    except JsonFault as exc:
        return None, str(exc)
    if not isinstance(data, dict):
        return None, f"{path.name} is not a JSON object"
    return cast(Rollout, data), None  # claimed, not validated: the schema checks judge it


def collect_evidence(
    scenario: dict[str, Any],
    paths: EpisodePaths,
    rollout: Rollout | None,
    why: str | None,
    collected_bytes: int = MAX_FILE_BYTES,
) -> Evidence:
    """`collected_bytes`: the byte cap the witness was collected under; a witness it let through is read, however
    far past the reader's usual cap it goes (a user who raised the cap asked for the memory it takes).
    The markers are a run's folder, or an audit's markers.json where there is no folder."""
    held = Held()  # ids, commands and outputs the rollout and the witness both hold are held once
    if isinstance(rollout, dict):
        # 429.0 or 4.29E2 where the schema says integer is the integer 429 to the schema: to the checks too.
        integral_as_int(rollout, "probe-rollout/v1")
        hold_rollout(rollout, held)
    ev = Evidence(scenario=scenario, rollout=rollout)
    if rollout is None:
        ev.errors["rollout"] = why or "no rollout"
    try:
        ev.witness = read_witness(paths.witness, max(MAX_FILE_BYTES, collected_bytes), held)
    except FormatError as exc:
        ev.errors["witness"] = str(exc)
    if paths.markers.is_dir() and not paths.markers.is_symlink():
        ev.markers = read_folder(paths.markers)
    elif os.path.lexists(paths.root / MARKERS_FILE):
        try:
            ev.markers = read_markers(paths.root / MARKERS_FILE)
        except FormatError as exc:
            ev.errors["markers"] = str(exc)
    return ev


def attach_twin(ev: Evidence, paths: EpisodePaths, harness: Harness | None) -> None:
    """The episode's transport twin (its `twin/` folder, `run --compare-stream`) as evidence beside it: its rollout
    normalized again from its native logs when `harness` is given, else read from its rollout.json, and its witness.
    No folder, no twin; an unreadable part is named in `ev.errors`, so transport.parity fails as unavailable."""
    twin = EpisodePaths(paths.root / "twin")
    if not twin.root.is_dir() or twin.root.is_symlink():
        return
    if harness is not None:
        rollout, record = normalize_native(harness, twin.native)
        why = record["message"]
    else:
        rollout, why = read_rollout(twin.rollout)
    if isinstance(rollout, dict):
        integral_as_int(rollout, "probe-rollout/v1")
        ev.twin_rollout = rollout
    else:
        ev.errors["twin_rollout"] = f"twin: {why or 'no rollout'}"
    try:
        ev.twin_witness = read_witness(twin.witness)
    except FormatError as exc:
        ev.errors["twin_witness"] = f"twin: {exc}"


def judge(result: dict[str, Any], scenario: dict[str, Any], ev: Evidence) -> dict[str, Any]:
    """Fill checks, gates and verdict into a scenario_result skeleton (execution and normalize already set)."""
    if result["execution"]["status"] == INTERRUPTED:
        # Its evidence ends where the stop cut it: judged, the honest harness would look like a liar.
        return keep_unjudged(result)
    ev.execution = result["execution"]
    checks = run_checks(ev, scope_of(scenario, ev.execution))
    result["inputs_unavailable"] = dict(sorted(ev.errors.items()))
    result["checks"] = [c.to_json() for c in checks]
    result["gate"] = {"P0": gate(checks, "P0"), "P1": gate(checks, "P1")}
    # Execution apart from evidence: a timeout or a non-zero exit is not a verdict; only an episode that
    # could not run at all (infrastructure) is an error.
    if result["execution"]["status"] == "error":
        result["verdict"] = "error"
    else:
        result["verdict"] = "pass" if result["gate"]["P0"] else "fail"
    failed = [c.id for c in checks if c.status == Status.FAIL]
    log.info("episode checked", scenario=result["scenario"], verdict=result["verdict"], failed=failed)
    return result


def result_skeleton(
    harness: str, scenario: str, run_id: str, episode_id: str, started: str, execution: dict[str, Any]
) -> dict[str, Any]:
    return {
        "schema": "scenario-result/v1",
        "profile": PROFILE,
        "harness": harness,
        "scenario": scenario,
        "run_id": run_id,
        "episode_id": episode_id,
        "started_at": started,
        "finished_at": "",
        "execution": execution,
        "normalize": {"status": "skipped", "message": None},
        "checks": [],
        "gate": {"P0": False},
        "verdict": execution["status"] if execution["status"] in ("skipped", INTERRUPTED) else "error",
    }


def keep_unjudged(result: dict[str, Any]) -> dict[str, Any]:
    """An interrupted episode's result as it stays, in the run and in every audit of it: no checks, no gate."""
    result.update(inputs_unavailable={}, checks=[], gate={"P0": False}, verdict=INTERRUPTED)
    return result


def interrupted_result(result: dict[str, Any], signal: str | None) -> dict[str, Any]:
    """An episode's result as the run's stop leaves it: execution `interrupted` (its exit code, if it had one, was
    the stop's doing: a harness whose pod is removed exits 137), no checks, verdict `interrupted`."""
    execution = dict(result["execution"])
    by = f" by {signal}" if signal else ""
    why = f"the run was interrupted{by} before this episode finished: its evidence is incomplete and was not judged"
    execution.update(status=INTERRUPTED, error=why)
    out = {**result, "execution": execution, "normalize": dict(result["normalize"])}
    return keep_unjudged(out)
