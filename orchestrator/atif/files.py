"""Where an episode's ATIF trajectory is, reading it as a rollout, and exporting a run's rollouts as ATIF."""

from __future__ import annotations

import json
import os
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from orchestrator.atif.agree import core_faults
from orchestrator.atif.read import atif_to_rollout
from orchestrator.atif.validate import EXTENSION_FORMAT, load_atif, validate_atif, validate_extension
from orchestrator.atif.write import EXTENSION, TooLarge, rollout_to_atif
from orchestrator.evidence import Fault, FormatError, load_json
from orchestrator.evidence.jsonread import MAX_FILE_BYTES, JsonFault, loads
from orchestrator.output import make_output
from orchestrator.records import Rollout
from orchestrator.runtime.collect import MAX_TREE_DEPTH, Collection, CollectLimits

__all__ = ["ATIF_NAME", "ExportResult", "export_atif", "find_atif", "read_atif_rollout"]

ATIF_NAME = "trajectory.json"
# What an exported episode keeps besides its trajectory, so the export is itself an auditable run directory: the run's
# own result too, for its execution record (how the harness process ended), without which its audit could not judge
# the process checks the run judged.
# Disagreements of core fields with the extension named in a normalize message; the count says how many more.
_SHOWN = 5
# An episode's transport twin (`run --compare-stream`) goes with it as it was: its own evidence and rollout.
# An audited episode holds its markers as markers.json (orchestrator/evidence/markers.py), a run's as a folder.
_EVIDENCE = (
    "scenario.json",
    "witness.jsonl",
    "runtime.json",
    "markers",
    "markers.json",
    "scenario_result.json",
    "twin",
)


def find_atif(episode: Path) -> Path | None:
    """The episode's trajectory.json (an export), else the first in path order its harness wrote into native/, else
    None. No link is followed (a linked trajectory.json or native/ is not one), and the search is bounded as the
    collection is: at most MAX_TREE_DEPTH folders deep and the collection's file count, walked without recursion."""
    if _is(episode / ATIF_NAME, stat.S_ISREG):
        return episode / ATIF_NAME
    native = episode / "native"
    if not _is(native, stat.S_ISDIR):
        return None
    found: list[Path] = []
    pending, seen = [(native, 0)], 0
    while pending and seen <= CollectLimits.max_files:
        folder, depth = pending.pop()
        try:
            with os.scandir(folder) as entries:
                listed = list(islice(entries, CollectLimits.max_files + 1 - seen))
        except OSError:
            continue
        seen += len(listed)
        for entry in listed:
            if entry.is_dir(follow_symlinks=False) and depth < MAX_TREE_DEPTH:
                pending.append((Path(entry.path), depth + 1))
            elif entry.name == ATIF_NAME and entry.is_file(follow_symlinks=False):
                found.append(Path(entry.path))
    return min(found) if found else None


def _is(path: Path, kind: Callable[[int], bool]) -> bool:
    try:
        return kind(os.lstat(path).st_mode)
    except OSError:
        return False


def read_atif_rollout(episode: Path, harness_name: str) -> tuple[Rollout | None, str | None]:
    """(rollout, None), or (None, why) when there is no trajectory or it is not ATIF: a finding, not a crash."""
    path = find_atif(episode)
    if path is None:
        return None, f"no {ATIF_NAME} in the episode or its native/ logs"
    try:
        doc = load_atif(path)
    except FormatError as exc:
        return None, f"not an ATIF trajectory: {exc}"
    return _as_rollout(doc, path.name, harness_name)


def _as_rollout(doc: dict[str, Any], name: str, harness_name: str) -> tuple[Rollout | None, str | None]:
    """read_atif_rollout past the file: an export holds what it writes to this too, so it never writes what its
    own reader refuses."""
    try:
        validate_extension(doc, name)
    except FormatError as exc:
        # Valid ATIF (`extra` is free-form there) whose extension is not ours as we write it: whoever wrote the
        # trajectory is answerable for it, as for a bad rollout.
        return None, f"the ATIF trajectory's extra.harness_probe is not a valid {EXTENSION_FORMAT}: {exc}"
    try:
        rollout = atif_to_rollout(doc, harness_name)
        disagree = core_faults(doc, rollout)
    except (KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
        # What the extension's schema lets through and still does not hold together as a rollout.
        return None, f"the ATIF trajectory does not read as a rollout: {type(exc).__name__}: {str(exc)[:300]}"
    if disagree:
        # The checks judge what the extension says; a core field a Harbor reader sees saying otherwise would pass
        # unjudged, so the writer answers for the trajectory as for an extension that is not ours.
        shown = "; ".join(str(f) for f in disagree[:_SHOWN])
        more = f" (and {len(disagree) - _SHOWN} more)" if len(disagree) > _SHOWN else ""
        return None, f"the ATIF trajectory's core fields disagree with its extra.{EXTENSION}: {shown}{more}"
    return rollout, None


@dataclass
class ExportResult:
    written: list[Path] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def export_atif(episodes: list[tuple[str, str, Path]], output: Path, version: str = "ATIF-v1.8") -> ExportResult:
    """Write OUTPUT/<harness>/<scenario>/trajectory.json per episode with a rollout, plus its witness evidence.

    A saved run may hold anything: a rollout that is not a valid probe-rollout/v1 is skipped with its first fault,
    as is one with two records of one id, or whose trajectory its own reader (read_atif_rollout) would refuse; and
    the evidence is copied as the audit copies it (regular files and folders only, never through a link, under
    the collection's caps), what was not copied named among the skipped.
    """
    res = ExportResult()
    make_output(output)
    try:
        _export(episodes, output, version, res)
    except BaseException:
        # Nothing half-exported is left (as a merge leaves nothing half-merged): Ctrl-C or a full disk part-way would
        # leave a truncated witness.jsonl beside its scenario.json, a folder a later audit takes as an episode.
        shutil.rmtree(output, ignore_errors=True)
        raise
    return res


def _export(episodes: list[tuple[str, str, Path]], output: Path, version: str, res: ExportResult) -> None:
    for harness, scenario, ep in episodes:
        rollout, why = _valid_rollout(ep / "rollout.json")
        why = why or _duplicate_id(rollout)
        if rollout is None or why:
            res.skipped.append(f"{harness}/{scenario}: {why}")
            continue
        try:
            text = _atif_text(rollout, version, harness, scenario)
        except FormatError as exc:
            res.skipped.append(f"{harness}/{scenario}: {' '.join(str(exc).split())[:500]}")
            continue
        dest = output / harness / scenario
        dest.mkdir(parents=True)
        copied = Collection()
        for name in _EVIDENCE:
            copied.copy_tree(ep / name, dest / name, name)
        res.skipped += [f"{harness}/{scenario}: {f.path}: {f.reason}" for f in copied.findings]
        # Written whole to a temporary name first, so a failure never leaves a 0-byte trajectory.json.
        tmp = dest / f".{ATIF_NAME}.tmp"
        tmp.write_text(text, encoding="ascii")
        tmp.replace(dest / ATIF_NAME)
        res.written.append(dest / ATIF_NAME)


def _atif_text(rollout: dict[str, Any], version: str, harness: str, scenario: str) -> str:
    """The text of the episode's trajectory, held to what its own reader (read_atif_rollout) takes from it; a
    FormatError names why not, and nothing is written then."""
    what = f"ATIF export of {harness}/{scenario}"
    try:
        doc = rollout_to_atif(rollout, version)
    except TooLarge as exc:
        raise FormatError(what, [Fault("$", str(exc))]) from None
    # No bad file is ever left: a rollout valid on its own can still not make valid ATIF (two invocations of one id
    # make two subagent trajectories of one id); that episode is skipped, with the faults. The extension is held to
    # its own schema too, as a reader of the export will hold it.
    validate_atif(doc, what)
    validate_extension(doc, f"the extension of the {what}")
    try:
        # ASCII: a string the trajectory carries may hold a lone surrogate, which no UTF-8 writer takes.
        text = json.dumps(doc, indent=2, ensure_ascii=True, allow_nan=False) + "\n"
    except ValueError as exc:  # NaN or infinity: no JSON
        raise FormatError(what, [Fault("$", str(exc))]) from None
    # The reader's bounds are not the schema's: its byte cap, depth cap (the tool record sits a dozen levels below
    # the root) and integer digits (token totals add up), read back as load_atif reads the file.
    if len(text) > MAX_FILE_BYTES:
        fault = f"the trajectory would be {len(text)} bytes, more than the {MAX_FILE_BYTES}-byte cap its reader reads"
        raise FormatError(what, [Fault("$", fault)])
    try:
        back = loads(text)
    except JsonFault as exc:
        raise FormatError(what, [Fault("$", f"its reader would refuse it: {exc}")]) from None
    _, why = _as_rollout(back, what, harness)
    if why is not None:
        raise FormatError(what, [Fault("$", why)])
    return text


def _duplicate_id(rollout: dict[str, Any] | None) -> str | None:
    """Why a rollout cannot be exported as it says: the trajectory keeps one record per id (the last would win)."""
    for records, key in (("model_calls", "model_call_id"), ("tool_calls", "tool_call_id")):
        seen: set[Any] = set()
        for rec in (rollout or {}).get(records) or []:
            rid = rec.get(key) if isinstance(rec, dict) else None
            if rid in seen:
                return f"{key} {rid!r} appears twice in rollout.json"
            seen.add(rid)
    return None


def _valid_rollout(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    try:
        return load_json(path, "probe-rollout/v1"), None
    except FormatError as exc:  # absent, unreadable, or not the schema's: its first fault names which
        first, more = exc.faults[0], len(exc.faults) - 1
        also = f" (and {more} more)" if more else ""
        return None, f"rollout.json is not a valid probe-rollout/v1: {first.path}: {first.message}{also}"
