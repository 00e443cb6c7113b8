"""Merging shard outputs (`run --shard I/N`) into one run directory with one summary.json and one set of reports."""

from __future__ import annotations

import hashlib
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.errors import InputError
from orchestrator.evidence import Fault, FormatError, load_json, validate
from orchestrator.evidence.jsonread import MAX_FILE_BYTES
from orchestrator.output import check_output, make_output, write_json
from orchestrator.paths import RunPaths
from orchestrator.report import Interruption, report_run
from orchestrator.runtime.collect import MAX_TREE_DEPTH, Collection, CollectLimits
from orchestrator.scenarios import list_scenarios

__all__ = [
    "IncompleteShard",
    "InconsistentShards",
    "MergeError",
    "MergeResult",
    "OverlappingShards",
    "UnsafeShard",
    "merge_runs",
]

# One episode folder: what its collection may have copied, the files the run wrote beside it (a rollout as large
# as the JSON reader takes, results, reports), and time enough for it on a slow disk.
_EPISODE_LIMITS = CollectLimits(
    max_bytes=CollectLimits.max_bytes + 2 * MAX_FILE_BYTES, max_files=CollectLimits.max_files + 100, seconds=3600.0
)


class MergeError(InputError, ValueError):
    """The inputs cannot be one run; the subclass names why."""


class OverlappingShards(MergeError):
    """Two inputs hold the same harness x scenario episode (or are the same run)."""


class InconsistentShards(MergeError):
    """Inputs that did not measure the same thing: profile, version, scenario, image or option differs."""


class UnsafeShard(MergeError):
    """An input holds what no run writes: a link, a device, a FIFO, an over-cap or too-deep file."""


class IncompleteShard(MergeError):
    """An input has no summary.json: killed, still running, or not a run directory. (A run stopped by Ctrl-C or
    SIGTERM has one, marked interrupted: it is merged, and the merged run is interrupted too.)"""


@dataclass
class MergeResult:
    output: Path
    results: list[dict[str, Any]]
    exit_code: int


@dataclass
class _Source:
    path: Path
    suite: dict[str, Any]
    summary: dict[str, Any]
    episodes: list[tuple[str, str]]


def _load(path: Path) -> _Source:
    """A shard's suite, summary and episode list, each episode's result read and valid: nothing is written before
    every input is known to be whole."""
    paths = RunPaths(path)
    if not paths.suite.is_file():
        raise IncompleteShard(f"{path}: no suite.json (not a run directory)")
    if not (path / "summary.json").is_file():
        raise IncompleteShard(f"{path}: no summary.json (the run was killed or is still running)")
    try:
        suite = load_json(paths.suite, "suite/v1")
        summary = load_json(path / "summary.json", "probe-summary/v1")
        episodes = [(h["name"], e["scenario"]) for h in summary["harnesses"] for e in h["scenarios"]]
        harnesses = {h["name"] for h in suite["harnesses"]}
        scenarios = {sc["name"] for sc in suite["scenarios"]}
        for h, sc in episodes:
            where = paths.episode(h, sc).result  # a name that is no plain folder name is refused first
            if h not in harnesses or sc not in scenarios:
                raise FormatError(
                    str(path / "summary.json"), [Fault("$.harnesses", f"episode {h}/{sc} is not in its suite.json")]
                )
            result = load_json(where, "scenario-result/v1")
            if (result["harness"], result["scenario"]) != (h, sc):
                claims = f"{result['harness']}/{result['scenario']}"
                raise FormatError(
                    str(where), [Fault("$", f"claims episode {claims}, but is in the folder of {h}/{sc}")]
                )
    except (FormatError, ValueError) as exc:
        raise IncompleteShard(f"{path}: {exc}") from None
    return _Source(path, suite, summary, episodes)


def _same(what: str, values: dict[str, Any]) -> None:
    """values: source -> value; all must be equal."""
    distinct = {repr(v) for v in values.values()}
    if len(distinct) > 1:
        shown = "; ".join(f"{src}: {v!r}" for src, v in values.items())
        raise InconsistentShards(f"{what} differs between inputs ({shown})")


def _check(sources: list[_Source]) -> None:
    _same("profile", {str(s.path): s.summary["profile"] for s in sources})
    _same("harness-probe version", {str(s.path): s.suite["tool_version"] for s in sources})
    _same("timeout", {str(s.path): s.suite.get("timeout_seconds") for s in sources})
    run_ids = [s.suite["run_id"] for s in sources]
    if len(set(run_ids)) != len(run_ids):
        raise OverlappingShards(f"the same run appears twice among the inputs (run ids {', '.join(run_ids)})")
    sharded = [str(s.path) for s in sources if "shard" in s.suite]
    if sharded and len(sharded) != len(sources):
        whole = ", ".join(str(s.path) for s in sources if "shard" not in s.suite)
        raise InconsistentShards(f"shards ({', '.join(sharded)}) cannot be merged with unsharded runs ({whole})")
    for s in sources:
        if "shard" in s.suite and s.suite["shard"]["index"] > s.suite["shard"]["count"]:
            shard = s.suite["shard"]
            raise InconsistentShards(f"{s.path}: shard {shard['index']} of {shard['count']} does not exist")
    counts = {str(s.path): s.suite["shard"]["count"] for s in sources if "shard" in s.suite}
    _same("shard count", counts)
    indexes = [s.suite["shard"]["index"] for s in sources if "shard" in s.suite]
    if len(set(indexes)) != len(indexes):
        raise OverlappingShards(f"shard index given twice: {sorted(indexes)}")
    keyed: dict[tuple[str, str], dict[str, Any]] = {
        ("scenario", sc["name"]): {} for s in sources for sc in s.suite["scenarios"]
    }
    for s in sources:
        for sc in s.suite["scenarios"]:
            keyed[("scenario", sc["name"])][str(s.path)] = sc["sha256"]
        for name, img in s.suite["images"].items():
            keyed.setdefault(("image", name), {})[str(s.path)] = img["image_id"]
        for h in s.suite["harnesses"]:
            keyed.setdefault(("harness options", h["name"]), {})[str(s.path)] = h["options"]
        for f, digest in s.suite["inputs"].items():
            keyed.setdefault(("input file", f), {})[str(s.path)] = digest
    for (kind, name), values in keyed.items():
        _same(f"{kind} {name!r}", values)
    owner: dict[tuple[str, str], Path] = {}
    for s in sources:
        for ep in s.episodes:
            if ep in owner:
                raise OverlappingShards(f"episode {ep[0]}/{ep[1]} is in both {owner[ep]} and {s.path}")
            owner[ep] = s.path


def _union(items: list[list[dict[str, Any]]], key: str) -> list[dict[str, Any]]:
    seen: dict[str, dict[str, Any]] = {}
    for group in items:
        for item in group:
            seen.setdefault(item[key], item)
    return list(seen.values())


def merge_runs(sources: list[Path], output: Path) -> MergeResult:
    """Combine run directories (typically the N shards of one grid) into `output`, a new run directory."""
    check_output(output)
    if not sources:
        raise MergeError("nothing to merge")
    loaded = [_load(p) for p in sources]
    _check(loaded)
    ordered = sorted(loaded, key=lambda s: (s.suite.get("shard", {}).get("index", 0), s.suite["run_id"]))
    run_ids = sorted(s.suite["run_id"] for s in ordered)
    suite: dict[str, Any] = {
        "schema": "suite/v1",
        "run_id": "merge-" + hashlib.sha256(" ".join(run_ids).encode()).hexdigest()[:12],
        "started_at": min(s.suite["started_at"] for s in ordered),
        "tool_version": ordered[0].suite["tool_version"],
        "command": shlex.join(["harness-probe", *sys.argv[1:]]),
        "harnesses": _union([s.suite["harnesses"] for s in ordered], "name"),
        "scenarios": _union([s.suite["scenarios"] for s in ordered], "name"),
        "images": {k: v for s in ordered for k, v in s.suite["images"].items()},
        "inputs": dict(sorted({k: v for s in ordered for k, v in s.suite["inputs"].items()}.items())),
        "merged_from": [
            {"run_id": s.suite["run_id"], "source": str(s.path.resolve()), "shard": s.suite.get("shard")}
            for s in ordered
        ],
    }
    if "timeout_seconds" in ordered[0].suite:
        suite["timeout_seconds"] = ordered[0].suite["timeout_seconds"]
    validate(suite, "suite/v1", "merged suite.json")
    make_output(output)
    try:
        return _write(output, suite, ordered)
    except BaseException:
        # Nothing half-merged is left: an input that changed under the copy, a full disk, Ctrl-C.
        shutil.rmtree(output, ignore_errors=True)
        raise


def _copy_episode(shard: Path, where: str, src: Path, dest: Path) -> None:
    """Copy one episode folder as the audit copies evidence: regular files and folders only, never through a link,
    a device or a FIFO, no sparse file made dense, within one episode's caps. A run's own output never holds
    anything else (its collection copied none of it), so anything else is a shard changed since: refused, named."""
    copied = Collection(_EPISODE_LIMITS)
    dest.parent.mkdir(parents=True, exist_ok=True)
    # native/ holds what the run collected, up to the collection's depth cap below it.
    copied.copy_tree(src, dest, where, counted=False, max_depth=MAX_TREE_DEPTH + 1)
    if copied.findings:
        first = copied.findings[0]
        more = len(copied.findings) - 1 + copied.findings_dropped
        also = f" (and {more} more)" if more else ""
        raise UnsafeShard(f"{shard}: {first.path}: {first.kind}: {first.reason}{also}")


def _write(output: Path, suite: dict[str, Any], ordered: list[_Source]) -> MergeResult:
    write_json(RunPaths(output).suite, suite)
    results = []
    for s in ordered:
        for h, sc in s.episodes:
            src, dest = RunPaths(s.path).episode(h, sc).root, RunPaths(output).episode(h, sc).root
            _copy_episode(s.path, f"{h}/{sc}", src, dest)
            try:
                results.append(load_json(dest / "scenario_result.json", "scenario-result/v1"))
            except FormatError as exc:  # valid when read a moment ago: the input changed while it was merged
                raise IncompleteShard(f"{s.path}: {h}/{sc} changed while it was merged: {exc}") from None
    # Expected: every harness x scenario of the union, so a shard left out shows up as missing episodes.
    full_suite = {sc["name"] for sc in suite["scenarios"]} >= {sc.name for sc in list_scenarios()}
    finished = max(s.summary["timestamps"]["finished_at"] for s in ordered)
    # A shard that was stopped makes the merged run a stopped one: its episodes that never ran are not run.
    stops = [i for s in ordered if (i := Interruption.of(s.summary)) is not None]
    code = report_run(
        output,
        suite,
        results,
        full_suite=full_suite,
        started_at=suite["started_at"],
        finished_at=finished,
        interrupted=Interruption(next((i.signal for i in stops if i.signal), None)) if stops else None,
    )
    return MergeResult(output, results, code)
