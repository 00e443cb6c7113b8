"""Offline audits: re-check saved episodes (witness + rollout, or witness + native logs) with no Docker at all."""

from __future__ import annotations

import gc
import hashlib
import os
import stat
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

import structlog

from orchestrator import __version__
from orchestrator.atif import read_atif_rollout
from orchestrator.audit_copy import copy_evidence
from orchestrator.audit_find import atif_export_hint, episode_names, find_episodes, no_episodes, was_cut_short
from orchestrator.audit_find import is_kind as _is
from orchestrator.checks.evidence import Evidence
from orchestrator.errors import BadOption, InputChanged
from orchestrator.evidence import Fault, FormatError, load_json, validate
from orchestrator.evidence.bulk import gc_paused
from orchestrator.evidence.jsonread import MAX_FILE_BYTES, JsonFault, read_bytes
from orchestrator.harnesses import Harness
from orchestrator.output import check_output, make_output, now_iso, write_json
from orchestrator.paths import EpisodePaths, RunPaths
from orchestrator.report.episode_page import write_episode_page
from orchestrator.report.output import write_streamed
from orchestrator.report.summary import Interruption, SummaryBuilder
from orchestrator.runtime.collect import Collection, CollectLimits, Finding
from orchestrator.scenarios import list_scenarios
from orchestrator.treehash import TreeHashes, write_audit_record
from orchestrator.verdict import (
    attach_twin,
    collect_evidence,
    judge,
    normalize_native,
    read_rollout,
    result_skeleton,
)

log = structlog.get_logger(__name__)

__all__ = [
    "AuditResult",
    "InputChanged",
    "SavedResults",
    "atif_export_hint",
    "audit",
    "episode_names",
    "find_episodes",
    "no_episodes",
]

ROLLOUT_FORMATS = ("probe", "atif")


class SavedResults(Sequence[dict[str, Any]]):
    """The audited episodes' scenario_result.json files, read when asked for: an audit of thousands holds none."""

    def __init__(self, run: RunPaths, episodes: list[tuple[str, str]]) -> None:
        self._run, self._episodes = run, episodes

    def __len__(self) -> int:
        return len(self._episodes)

    @overload
    def __getitem__(self, i: int) -> dict[str, Any]: ...
    @overload
    def __getitem__(self, i: slice) -> list[dict[str, Any]]: ...
    def __getitem__(self, i: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(i, slice):
            return [self[j] for j in range(len(self))[i]]
        result: dict[str, Any] = load_json(self._run.episode(*self._episodes[i]).result, "scenario-result/v1")
        return result


@dataclass
class AuditResult:
    output: Path
    results: SavedResults
    exit_code: int


def _suite(source: Path, episodes: list[tuple[str, str]]) -> dict[str, Any]:
    path = RunPaths(source).suite
    if os.path.lexists(path):
        suite: dict[str, Any] = load_json(path, "suite/v1")
        return suite
    # A bare collection of witness + rollout pairs: describe it as a run of its own.
    harnesses = sorted({h for h, _ in episodes})
    scenarios: dict[str, str] = {}
    for h, s in episodes:
        ep = source / h / s
        try:
            scenarios.setdefault(s, hashlib.sha256(read_bytes(ep / "scenario.json")).hexdigest())
        except JsonFault as exc:
            raise FormatError(str(ep / "scenario.json"), [Fault("$", str(exc))]) from None
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


def _collection_record(old: dict[str, Any] | None, copied: Collection) -> dict[str, Any]:
    now = copied.to_json()
    if not old or not isinstance(old.get("collection"), dict):
        return now
    record = dict(old["collection"])
    seen = {(f.get("kind"), f.get("path")) for f in record.get("findings", [])}
    extra = [f for f in now["findings"] if (f["kind"], f["path"]) not in seen]
    if extra:
        record["findings"] = [*record.get("findings", []), *extra]
    return record


def _audit_episode(
    harness_name: str,
    scenario_name: str,
    src: Path,
    dest: EpisodePaths,
    suite: dict[str, Any],
    harness: Harness | None,
    rollout_format: str,
    limits: CollectLimits,
) -> dict[str, Any]:
    copied = copy_evidence(src, dest.root, limits)
    old: dict[str, Any] | None = None
    try:
        old = load_json(src / "scenario_result.json", "scenario-result/v1")
    except FormatError as exc:
        if _is(src / "scenario_result.json", stat.S_IFREG) or os.path.lexists(src / "scenario_result.json"):
            # A saved result we cannot read is no reason not to re-check the evidence; it is named instead.
            copied.note(Finding("special", "scenario_result.json", f"not used: {str(exc).splitlines()[-1].strip()}"))
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
    # The run's own collection record stands (an audit of an untouched copy reproduces the result byte for
    # byte); what the audit's copy met beyond it (a link planted in the saved folder since) is added to its
    # findings.
    result["collection"] = _collection_record(old, copied)
    judged: Evidence | None = None
    try:
        # The inputs hold no cycle (JSON data, their indexes): the collector need not walk their millions of
        # objects while they are read, nor again and again while the checks run (seconds on a 100,000-call
        # rollout), so they are read with it paused and then frozen out of its sight. Thawed when the episode
        # ends.
        with gc_paused():
            scenario = load_json(dest.scenario, "probe-scenario/v1")
            if harness is not None:
                rollout, result["normalize"] = normalize_native(harness, dest.native)
                if rollout is not None:
                    write_json(dest.rollout, rollout)
                why = result["normalize"]["message"]
            elif rollout_format == "atif":
                # The saved rollout.json is not what is audited here: drop the copy so nothing reads it by mistake.
                dest.rollout.unlink(missing_ok=True)
                # Read from the audit's copy, as every other reader: link-free, capped, what the summary hashes.
                rollout, why = read_atif_rollout(dest.root, harness_name)
                if rollout is not None:
                    write_json(dest.rollout, rollout)
                result["normalize"] = {"status": "ok" if rollout is not None else "error", "message": why}
            else:
                rollout, why = read_rollout(dest.rollout)
                result["normalize"] = old["normalize"] if old else {"status": "skipped", "message": None}
                if rollout is None and not os.path.lexists(dest.rollout) and result["normalize"]["status"] == "error":
                    # The run wrote no rollout.json because normalizing failed: its checks named that failure as
                    # the reason, and an audit that reproduces them names the same one, not the missing file.
                    why = result["normalize"]["message"] or why
            ev = collect_evidence(scenario, dest, rollout, why, limits.max_bytes)
            attach_twin(ev, dest, harness)
            gc.freeze()
        # Read from rollout.json here, or from the normalizer's JSON result (an ATIF rollout is built in Python).
        ev.rollout_parsed = rollout_format == "probe"
        # An episode its run's stop cut short stays `interrupted`: judge() never re-judges it into a fail.
        judge(result, scenario, ev)
        judged = ev
    except Exception as exc:  # one broken episode is reported as an error; the others are still audited
        result["execution"] = {
            **execution,
            "status": "error",
            "error": f"audit failed: {type(exc).__name__}: {exc}",
        }
        result["verdict"] = "error"
        (dest.root / "audit-error.txt").write_text(traceback.format_exc())
    result["finished_at"] = old["finished_at"] if old else now_iso()
    validate(result, "scenario-result/v1", "scenario_result")
    write_json(dest.result, result)
    # After the copy (a saved page copied with it is replaced) and after the result (the page links it): from the
    # evidence the checks read, or for an episode the audit could not judge from its files, as a run does.
    if judged is not None:
        write_episode_page(dest, result, judged)
    elif _is(dest.scenario, stat.S_IFREG):
        write_episode_page(dest, result)
    return result


def _audit_or_error(
    harness_name: str,
    scenario_name: str,
    src: Path,
    dest: EpisodePaths,
    suite: dict[str, Any],
    harness: Harness | None,
    rollout_format: str,
    limits: CollectLimits,
) -> dict[str, Any]:
    """One episode's audit; anything it raises becomes that episode's `error`, with the traceback beside it."""
    try:
        return _audit_episode(harness_name, scenario_name, src, dest, suite, harness, rollout_format, limits)
    except Exception as exc:
        dest.root.mkdir(parents=True, exist_ok=True)
        (dest.root / "audit-error.txt").write_text(traceback.format_exc())
        execution = {"status": "error", "exit_code": None, "seconds": 0.0, "timeout_seconds": 0.0}
        execution["error"] = f"audit failed: {type(exc).__name__}: {str(exc)[:500]}"
        result = result_skeleton(
            harness_name, scenario_name, suite["run_id"], f"audit-{harness_name}-{scenario_name}", now_iso(), execution
        )
        result["finished_at"] = now_iso()
        write_json(dest.result, result)
        return result
    finally:
        # The episode's evidence is gone by now; what else was frozen goes back under the collector's care.
        gc.unfreeze()


def audit(
    source: Path,
    output: Path,
    harness: Harness | None = None,
    rollout_format: str = "probe",
    limits: CollectLimits | None = None,
) -> AuditResult:
    """Re-check every saved episode under `source` into the new directory `output`, then write the reports.

    rollout_format "atif" reads each episode's rollout from its ATIF trajectory.json (or native/**/trajectory.json).
    limits: the collection caps the saved runs drew on (a run's defaults when not given); the evidence they
    collected is copied under them again.
    """
    if rollout_format not in ROLLOUT_FORMATS:
        raise BadOption(f"unknown rollout format {rollout_format!r} (known: {', '.join(ROLLOUT_FORMATS)})")
    if harness is not None and rollout_format != "probe":
        raise BadOption("--harness re-normalizes native logs; it cannot be combined with --rollout-format atif")
    check_output(output)
    # Names only: an episode's folder is source/harness/scenario, made again when needed (10,000 Paths add up).
    episodes = episode_names(source)
    if not episodes:
        raise FormatError(str(source), [Fault("$", no_episodes(source))])
    limits = limits or CollectLimits()
    # What the audit may read of an episode: what its copy may (the collection caps) and each file read whole
    # (rollout, scenario, result, runtime). The walk hashes no more, so sparse files cannot make it read for ever.
    before = TreeHashes(source, read_budget=len(episodes) * (limits.max_bytes + 4 * MAX_FILE_BYTES))
    try:
        code = _audit_all(source, output, episodes, before, harness, rollout_format, limits)
    finally:
        before.close()
    return AuditResult(output, SavedResults(RunPaths(output), episodes), code)


def _audit_all(
    source: Path,
    output: Path,
    episodes: list[tuple[str, str]],
    before: TreeHashes,
    harness: Harness | None,
    rollout_format: str,
    limits: CollectLimits,
) -> int:
    suite = _suite(source, episodes)
    make_output(output)
    started = now_iso()
    write_json(RunPaths(output).suite, suite)
    # Each result goes to the summary's builder as its episode ends (the builder keeps it on disk, not in memory).
    builder = SummaryBuilder(output, suite)
    # An episode needs the run id only; the suite (one line per scenario of a bare collection) is not kept.
    suite = {"run_id": suite["run_id"]}
    try:
        for h, s in episodes:
            ep = source / h / s
            if harness is not None and harness.name != h:
                log.warning(
                    "episode of another harness audited with --harness", episode=f"{h}/{s}", harness=harness.name
                )
            log.info("auditing", harness=h, scenario=s)
            if not _is(ep / "witness.jsonl", stat.S_IFREG) and not was_cut_short(str(ep)):
                # The checks name the copy they read; the user needs the saved folder's missing file.
                log.warning("the saved episode has no witness: every check that reads the wire fails",
                            missing=str(ep / "witness.jsonl"))  # fmt: skip
            dest = RunPaths(output).episode(h, s)
            builder.add(_audit_or_error(h, s, ep, dest, suite, harness, rollout_format, limits))
        return _finish(source, output, episodes, before, builder, harness, rollout_format, started)
    finally:
        builder.close()


def _finish(
    source: Path,
    output: Path,
    episodes: list[tuple[str, str]],
    before: TreeHashes,
    builder: SummaryBuilder,
    harness: Harness | None,
    rollout_format: str,
    started: str,
) -> int:
    changed = before.changed()
    if changed:
        raise InputChanged(f"input files changed during the audit: {', '.join(changed[:10])}")
    old_summary = source / "summary.json"
    interrupted: Interruption | None = None
    if os.path.lexists(old_summary):
        saved = load_json(old_summary, "probe-summary/v1")
        full_suite = bool(saved["full_suite"])
        # A stopped run stays stopped: what it never ran is not run, not missing.
        interrupted = Interruption.of(saved)
    else:
        full_suite = {s for _, s in episodes} >= {s.name for s in list_scenarios()}
    record: dict[str, Any] = {
        "schema": "audit/v1",
        "source": str(source.resolve()),
        "harness": harness.name if harness else None,
        "inputs": {},  # filled from the walk as it is written
        **({"rollout_format": rollout_format} if rollout_format != "probe" else {}),
    }
    write_audit_record(output / "audit.json", record, before)
    return write_streamed(
        output, builder, full_suite=full_suite, started_at=started, finished_at=now_iso(), interrupted=interrupted
    )
