"""The run summary (probe-summary/v1): every episode's checks, the verdict, its exit code, input hashes; for a run
stopped before its end, what it got through (`interrupted`)."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator import __version__
from orchestrator.checks import PROFILE
from orchestrator.evidence import FormatError, fragment_faults, validate
from orchestrator.paths import RunPaths
from orchestrator.report.table import HarnessView, Row, row_of, views

__all__ = [
    "EVIDENCE_FILES",
    "EXIT_CODES",
    "SUMMARY_FORMAT",
    "TIMESTAMPS",
    "Interruption",
    "SummaryBuilder",
    "build_summary",
    "episode_entry",
    "result_errors",
    "summary_bytes",
    "summary_chunks",
    "without_timestamps",
]

SUMMARY_FORMAT = "probe-summary/v1"
EVIDENCE_FILES = ("witness.jsonl", "rollout.json", "scenario_result.json", "runtime.json")
# The one key under which every wall-clock time lives, so an audit can drop it and compare the rest.
TIMESTAMPS = "timestamps"
EXIT_CODES = {"pass": 0, "fail": 1, "error": 2, "interrupted": 130}
CHECKER_ERROR = "checker error:"  # the prefix run_checks gives a check whose function crashed
# A harness with an episode the stop cut short is unfinished: no finished episode's verdict can stand for it.
_SEVERITY = {"interrupted": 4, "error": 3, "fail": 2, "pass": 1, "skipped": 0}


@dataclass(frozen=True)
class Interruption:
    """The run was stopped before every episode had finished; `signal` names what stopped it, None when unknown."""

    signal: str | None

    @classmethod
    def of(cls, summary: dict[str, Any]) -> Interruption | None:
        """The interruption an earlier summary records (an audited or merged run), None when it records none."""
        record = summary.get("interrupted")
        return cls(record.get("signal")) if isinstance(record, dict) else None


def _sha256(path: Path) -> str | None:
    if not path.is_file():
        return None
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _first_failure(result: dict[str, Any]) -> dict[str, str] | None:
    if result["verdict"] in ("error", "interrupted"):
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


def episode_entry(paths: RunPaths, result: dict[str, Any]) -> dict[str, Any]:
    """The summary's record of one episode."""
    root = paths.episode(result["harness"], result["scenario"]).root
    return {
        "scenario": result["scenario"],
        "episode_id": result["episode_id"],
        "verdict": result["verdict"],
        "gate": dict(result["gate"]),
        "execution": dict(result["execution"]),
        "normalize": dict(result["normalize"]),
        "inputs_unavailable": dict(result.get("inputs_unavailable", {})),
        "checks": list(result["checks"]),
        "first_failure": _first_failure(result),
        "evidence": {name: _sha256(root / name) for name in EVIDENCE_FILES},
        TIMESTAMPS: {"started_at": result["started_at"], "finished_at": result["finished_at"]},
    }


def _worst(verdicts: Iterable[str]) -> str:
    return max(verdicts, key=_SEVERITY.__getitem__, default="skipped")


def result_errors(run_id: str, run_ids: set[str], r: dict[str, Any]) -> list[str]:
    """What in one episode's result makes the run an error."""
    errors: list[str] = []
    where = f"{r['harness']}/{r['scenario']}"
    if r["run_id"] not in run_ids:
        errors.append(f"{where}: run_id {r['run_id']!r} is not the suite's {run_id!r}")
    if r["profile"] != PROFILE:
        errors.append(f"{where}: checked against profile {r['profile']!r}, not {PROFILE!r}")
    if r["verdict"] == "error":
        reason = _first_failure(r)
        errors.append(f"{where}: episode error: {reason['reason'] if reason else 'unknown'}")
    for c in r["checks"]:
        # A crashing check is recorded as its failure, but it is a bug of ours, not the harness's finding.
        if any(reason.startswith(CHECKER_ERROR) for reason in c["reasons"]):
            errors.append(f"{where}: {c['id']}: {CHECKER_ERROR} see its reasons")
    return errors


class SummaryBuilder:
    """summary.json's content built one episode at a time, each episode's record kept on disk until written.

    In memory stay only what the header needs (counts, errors, verdicts, each harness's check rows) and an index
    of where each episode's record lies in an unlinked spool file: memory is flat in the number of episodes.
    Episodes may come in any order; they are read back sorted by name, so the same inputs give the same bytes.
    """

    def __init__(self, run_dir: Path, suite: dict[str, Any]) -> None:
        validate(suite, "suite/v1", "suite.json")
        # Of the suite's scenarios only the names are read: a bare collection of 10,000 episodes lists 10,000, each
        # with a hash no report shows, and the caller need not keep them either.
        self.suite = {k: v for k, v in suite.items() if k != "scenarios"}
        self._scenarios = [s["name"] for s in suite["scenarios"]]
        self.run_dir, self.paths = run_dir, RunPaths(run_dir)
        # A merged directory holds the episodes of the runs it names; any other run id is foreign evidence.
        self._run_ids = {suite["run_id"]} | {m["run_id"] for m in suite.get("merged_from", [])}
        self._spool = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close(); unlinked from the start)
        # Where each episode's record starts in the spool: one line of JSON (compact JSON holds no raw newline).
        self._index: dict[str, dict[str, int]] = {}
        self._errors: dict[tuple[str, str], list[str]] = {}
        self._verdicts = dict.fromkeys(("pass", "fail", "error", "skipped", "interrupted"), 0)
        self._worst: dict[str, str] = {}
        self._rows: dict[str, dict[str, tuple[str, int, Row]]] = {}

    def add(self, result: dict[str, Any]) -> None:
        """Take one episode's result; raises FormatError when it is not valid, ValueError when it is a repeat."""
        validate(result, "scenario-result/v1", f"scenario_result of {result.get('harness')}/{result.get('scenario')}")
        h, s = result["harness"], result["scenario"]
        if s in self._index.get(h, {}):
            raise ValueError(f"two scenario_results for {h}/{s}")
        entry = episode_entry(self.paths, result)
        found = fragment_faults(entry, SUMMARY_FORMAT, "/$defs/episode", f"$.harnesses[{h}].scenarios[{s}]")
        if found:
            raise FormatError("summary", found)
        offset = self._spool.seek(0, os.SEEK_END)
        self._spool.write(json.dumps(entry).encode("ascii") + b"\n")
        self._index.setdefault(h, {})[s] = offset
        errors = result_errors(self.suite["run_id"], self._run_ids, result)
        if errors:
            self._errors[(h, s)] = errors
        self._verdicts[result["verdict"]] += 1
        self._worst[h] = _worst([self._worst.get(h, "skipped"), result["verdict"]])
        # A harness's rows are its checks in the order of their first appearance, episodes taken by name.
        rows = self._rows.setdefault(h, {})
        for i, c in enumerate(result["checks"]):
            first = rows.get(c["id"])
            if first is None or (s, i) < first[:2]:
                rows[c["id"]] = (s, i, row_of(c))

    def _episodes(self, harness: str) -> Iterator[dict[str, Any]]:
        index = self._index[harness]
        for s in sorted(index):
            self._spool.seek(index[s])
            entry: dict[str, Any] = json.loads(self._spool.readline())
            yield entry

    def views(self) -> list[HarnessView]:
        options = {h["name"]: dict(h["options"]) for h in self.suite["harnesses"]}
        out = []
        for h in sorted(self._index):
            rows = tuple(r for _, _, r in sorted(self._rows[h].values(), key=lambda v: (v[0], v[1])))
            out.append(
                HarnessView(
                    h,
                    self._worst[h],
                    options.get(h, {}),
                    len(self._index[h]),
                    rows,
                    lambda h=h: iter(sorted(self._index[h])),  # type: ignore[misc]
                    lambda h=h: self._episodes(h),  # type: ignore[misc]
                )
            )
        return out

    def header(
        self, full_suite: bool, started_at: str, finished_at: str, interrupted: Interruption | None = None
    ) -> dict[str, Any]:
        """The summary with every harness's `scenarios` left empty (validated as such; each episode was at add).

        `interrupted`: the run was stopped before its end. A run holding an interrupted episode is one too (an audit
        or merge of one), told or not: its episodes that have no result never started, and are no error."""
        suite = self.suite
        if "episodes" in suite:
            expected = {(e["harness"], e["scenario"]) for e in suite["episodes"]}
        else:
            expected = {(h["name"], s) for h in suite["harnesses"] for s in self._scenarios}
        missing = [{"harness": h, "scenario": s} for h, s in sorted(expected) if s not in self._index.get(h, {})]
        del expected
        episodes = sum(len(index) for index in self._index.values())
        stopped = self._verdicts["interrupted"]
        if interrupted is None and stopped:
            interrupted = Interruption(None)
        not_run, missing = (missing, []) if interrupted is not None else ([], missing)
        errors = [] if episodes or missing or interrupted is not None else ["no episode was run"]
        errors += [e for key in sorted(self._errors) for e in self._errors[key]]
        errors += [f"{m['harness']}/{m['scenario']}: no scenario_result (episode missing)" for m in missing]
        verdict = "error" if errors else "fail" if self._verdicts["fail"] else "pass"
        if interrupted is not None:
            verdict = "interrupted"  # what did not run, or was cut short, certifies nothing either way
        counts = dict(self._verdicts)
        if interrupted is None:
            del counts["interrupted"]  # the field of a stopped run only: every other summary stays byte for byte
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
            "counts": {"episodes": episodes, **counts},
            "inputs": {
                "suite_json": _sha256(self.paths.suite),
                "files": dict(suite["inputs"]),
                "images": copy.deepcopy(suite["images"]),
            },
            "missing": missing,
            "harnesses": [
                {"name": v.name, "options": v.options, "verdict": v.verdict, "scenarios": []} for v in self.views()
            ],
        }
        if interrupted is not None:
            summary["interrupted"] = {
                "signal": interrupted.signal,
                "finished": episodes - stopped,
                "interrupted": stopped,
                "not_run": not_run,
            }
        overrides = {h["name"]: h["override"] for h in suite["harnesses"] if "override" in h}
        if overrides:
            summary["harness_overrides"] = overrides
        validate(summary, SUMMARY_FORMAT, "summary")
        return summary

    def summary(
        self, full_suite: bool, started_at: str, finished_at: str, interrupted: Interruption | None = None
    ) -> dict[str, Any]:
        """The whole summary in memory (for small runs and tests; the reports stream from header() and views())."""
        out = self.header(full_suite, started_at, finished_at, interrupted)
        for h in out["harnesses"]:
            h["scenarios"] = list(self._episodes(h["name"]))
        return out

    def close(self) -> None:
        self._spool.close()


def build_summary(
    run_dir: Path,
    suite: dict[str, Any],
    results: list[dict[str, Any]],
    full_suite: bool,
    started_at: str,
    finished_at: str,
    interrupted: Interruption | None = None,
) -> dict[str, Any]:
    """Build summary.json's content from suite.json, every scenario_result and the evidence files in run_dir.

    Raises FormatError when suite or a result is not valid, ValueError when an episode appears twice.
    """
    builder = SummaryBuilder(run_dir, suite)
    try:
        for r in results:
            builder.add(r)
        return builder.summary(full_suite, started_at, finished_at, interrupted)
    finally:
        builder.close()


def _dump(value: Any, level: int) -> str:
    # json.dumps(indent=2) of a value nested `level` deep: its own lines shifted right (no raw newline in JSON text).
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=True).replace("\n", "\n" + "  " * level)


def _array(items: Iterator[Iterator[str]], level: int) -> Iterator[str]:
    """A JSON array at `level` as json.dumps(indent=2) writes it, its items given as pieces."""
    pad = "\n" + "  " * (level + 1)
    first = True
    for item in items:
        yield ("[" if first else ",") + pad
        yield from item
        first = False
    yield "[]" if first else "\n" + "  " * level + "]"


_HOLE = "@@scenarios-or-harnesses@@"


def summary_chunks(header: dict[str, Any], tables: Iterable[HarnessView]) -> Iterator[str]:
    """summary.json in pieces, byte for byte what summary_bytes gives for the same content."""
    top = _dump({**header, "harnesses": _HOLE}, 0)
    before, _, after = top.partition(json.dumps(_HOLE))
    yield before

    def harness(t: HarnessView) -> Iterator[str]:
        text = _dump({"name": t.name, "options": t.options, "verdict": t.verdict, "scenarios": _HOLE}, 2)
        head, _, tail = text.partition(json.dumps(_HOLE))
        yield head
        yield from _array((iter((_dump(e, 4),)) for e in t.episodes()), 3)
        yield tail

    yield from _array((harness(t) for t in tables), 1)
    yield after + "\n"


def summary_bytes(summary: dict[str, Any]) -> bytes:
    """The exact bytes of summary.json: sorted keys and ASCII only, so equal content means equal bytes."""
    # ensure_ascii also keeps lone surrogates from harness output encodable.
    return "".join(summary_chunks(summary, views(summary))).encode("ascii")


def without_timestamps(summary: dict[str, Any]) -> dict[str, Any]:
    """A copy without the `timestamps` fields: what two builds from the same inputs must share."""
    out = copy.deepcopy(summary)
    out.pop(TIMESTAMPS, None)
    for h in out.get("harnesses", []):
        for e in h.get("scenarios", []):
            e.pop(TIMESTAMPS, None)
    return out
