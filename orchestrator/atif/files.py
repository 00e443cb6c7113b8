"""Where an episode's ATIF trajectory is, reading it as a rollout, and exporting a run's rollouts as ATIF."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.atif.read import atif_to_rollout
from orchestrator.atif.validate import EXTENSION_FORMAT, load_atif, validate_atif, validate_extension
from orchestrator.atif.write import rollout_to_atif
from orchestrator.evidence import FormatError, load_json
from orchestrator.output import make_output
from orchestrator.records import Rollout
from orchestrator.runtime.collect import Collection

__all__ = ["ATIF_NAME", "ExportResult", "export_atif", "find_atif", "read_atif_rollout"]

ATIF_NAME = "trajectory.json"
# What an exported episode keeps besides its trajectory, so the export is itself an auditable run directory: the run's
# own result too, for its execution record (how the harness process ended), without which its audit could not judge
# the process checks the run judged.
_EVIDENCE = ("scenario.json", "witness.jsonl", "runtime.json", "markers", "scenario_result.json")


def find_atif(episode: Path) -> Path | None:
    """The episode's trajectory.json (an export), else the one its harness wrote into native/, else None."""
    if (episode / ATIF_NAME).is_file():
        return episode / ATIF_NAME
    native = episode / "native"
    found = sorted(p for p in native.rglob(ATIF_NAME) if p.is_file()) if native.is_dir() else []
    return found[0] if found else None


def read_atif_rollout(episode: Path, harness_name: str) -> tuple[Rollout | None, str | None]:
    """(rollout, None), or (None, why) when there is no trajectory or it is not ATIF: a finding, not a crash."""
    path = find_atif(episode)
    if path is None:
        return None, f"no {ATIF_NAME} in the episode or its native/ logs"
    try:
        doc = load_atif(path)
    except FormatError as exc:
        return None, f"not an ATIF trajectory: {exc}"
    try:
        validate_extension(doc, path.name)
    except FormatError as exc:
        # Valid ATIF (`extra` is free-form there) whose extension is not ours as we write it: whoever wrote the
        # trajectory is answerable for it, as for a bad rollout.
        return None, f"the ATIF trajectory's extra.harness_probe is not a valid {EXTENSION_FORMAT}: {exc}"
    try:
        return atif_to_rollout(doc, harness_name), None
    except (KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
        # What the extension's schema lets through and still does not hold together as a rollout.
        return None, f"the ATIF trajectory does not read as a rollout: {type(exc).__name__}: {str(exc)[:300]}"


@dataclass
class ExportResult:
    written: list[Path] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def export_atif(episodes: list[tuple[str, str, Path]], output: Path, version: str = "ATIF-v1.8") -> ExportResult:
    """Write OUTPUT/<harness>/<scenario>/trajectory.json per episode with a rollout, plus its witness evidence.

    A saved run may hold anything: a rollout that is not a valid probe-rollout/v1 is skipped with its first fault,
    and the evidence is copied as the audit copies it (regular files and folders only, never through a link, under
    the collection's caps), what was not copied named among the skipped.
    """
    res = ExportResult()
    make_output(output)
    for harness, scenario, ep in episodes:
        rollout, why = _valid_rollout(ep / "rollout.json")
        if rollout is None:
            res.skipped.append(f"{harness}/{scenario}: {why}")
            continue
        doc = rollout_to_atif(rollout, version)
        try:
            # No bad file is ever left: a rollout valid on its own can still not make valid ATIF (two invocations of
            # one id make two subagent trajectories of one id); that episode is skipped, with the faults. The
            # extension is held to its own schema too, as a reader of the export will hold it.
            validate_atif(doc, f"ATIF export of {harness}/{scenario}")
            validate_extension(doc, f"the extension of the ATIF export of {harness}/{scenario}")
        except FormatError as exc:
            res.skipped.append(f"{harness}/{scenario}: {' '.join(str(exc).split())[:500]}")
            continue
        dest = output / harness / scenario
        dest.mkdir(parents=True)
        copied = Collection()
        for name in _EVIDENCE:
            copied.copy_tree(ep / name, dest / name, name)
        res.skipped += [f"{harness}/{scenario}: {f.path}: {f.reason}" for f in copied.findings]
        (dest / ATIF_NAME).write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
        res.written.append(dest / ATIF_NAME)
    return res


def _valid_rollout(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    try:
        return load_json(path, "probe-rollout/v1"), None
    except FormatError as exc:  # absent, unreadable, or not the schema's: its first fault names which
        first, more = exc.faults[0], len(exc.faults) - 1
        also = f" (and {more} more)" if more else ""
        return None, f"rollout.json is not a valid probe-rollout/v1: {first.path}: {first.message}{also}"
