"""Which folders of a saved run (or a bare tree of them) are episodes an audit re-checks, and why others are not."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from orchestrator.evidence.jsonread import JsonFault, read_bytes
from orchestrator.evidence.text import clean, is_text
from orchestrator.verdict import INTERRUPTED

__all__ = ["atif_export_hint", "episode_names", "find_episodes", "is_kind", "no_episodes", "was_cut_short"]


def is_kind(path: str | Path, kind: int) -> bool:
    """lstat-based: a link is never taken for what it points to."""
    try:
        return stat.S_IFMT(os.lstat(path).st_mode) == kind
    except OSError:
        return False


def _dirs(folder: str) -> list[str]:
    """The names of folder's real folders, sorted; kinds from the listing itself (lstat only where it gives none)."""
    with os.scandir(folder) as it:
        names = [e.name for e in it if e.is_dir(follow_symlinks=False)]
    names.sort()
    return names


def episode_names(
    source: Path, skipped: list[str] | None = None, unreadable: list[str] | None = None
) -> list[tuple[str, str]]:
    """(harness, scenario) for every `<harness>/<scenario>/` holding a scenario.json and a witness or a rollout.

    Only real folders and files count: a link in the source tree is never followed. Plain strings, one harness
    name shared by its episodes: a source of 10,000 episodes must not cost 10,000 Path objects at once.
    skipped, when given, gets one line per folder that holds part of an episode but not enough, naming what it lacks;
    unreadable one per folder whose scenario.json cannot be looked at (no permission), with the system's reason.
    """
    root = os.fspath(source)
    found = []
    for h in _dirs(root):
        for s in _dirs(os.path.join(root, h)):
            ep = os.path.join(root, h, s)
            if not (is_text(h) and is_text(s)):
                # A run names these folders after a harness and a scenario, never in bytes that are not UTF-8; every
                # record the audit writes names them, and JSON text cannot hold such a name.
                if skipped is not None:
                    skipped.append(f"{clean(h)}/{clean(s)}: its name is not UTF-8, as no run names a folder")
                continue
            try:
                scenario = stat.S_ISREG(os.lstat(os.path.join(ep, "scenario.json")).st_mode)
            except (FileNotFoundError, NotADirectoryError):
                scenario = False
            except OSError as exc:
                if unreadable is not None:
                    unreadable.append(f"{h}/{s}: it cannot be read: {exc.strerror or exc}")
                continue
            evidence = [f for f in ("witness.jsonl", "rollout.json") if is_kind(os.path.join(ep, f), stat.S_IFREG)]
            if scenario and (evidence or was_cut_short(ep)):
                found.append((h, s))
            elif skipped is not None and scenario:
                skipped.append(f"{h}/{s}: it has scenario.json but neither witness.jsonl nor rollout.json")
            elif skipped is not None and evidence:
                skipped.append(f"{h}/{s}: it has {' and '.join(evidence)} but no scenario.json")
    return found


def was_cut_short(episode: str) -> bool:
    """An episode its run's stop cut short before the witness was copied out: its result says `interrupted`, and an
    audit keeps it so (left out, it would count as missing: an error)."""
    path = os.path.join(episode, "scenario_result.json")
    if not is_kind(path, stat.S_IFREG):
        return False
    try:
        saved = json.loads(read_bytes(path, 1 << 20))
    except (JsonFault, OSError, ValueError):
        return False
    return isinstance(saved, dict) and saved.get("verdict") == INTERRUPTED


def atif_export_hint(source: Path) -> str | None:
    """What to say when an ATIF export is audited as probe rollouts: its episodes hold trajectory.json, no rollout."""
    episodes = episode_names(source)
    if not episodes or any(is_kind(source / h / s / "rollout.json", stat.S_IFREG) for h, s in episodes):
        return None
    if not all(is_kind(source / h / s / "trajectory.json", stat.S_IFREG) for h, s in episodes):
        return None
    return (
        f"{source} holds ATIF trajectories (trajectory.json, an export) and no rollout.json: "
        f"audit it with --rollout-format atif"
    )


def no_episodes(source: Path) -> str:
    """Why `source` holds no episode, naming the folders that hold part of one and what each lacks."""
    skipped: list[str] = []
    episode_names(source, skipped)
    expected = (
        "no episodes found (an episode is <harness>/<scenario>/ with scenario.json and witness.jsonl or rollout.json)"
    )
    return expected + ("; " + "; ".join(skipped[:5]) if skipped else "")


def find_episodes(source: Path) -> list[tuple[str, str, Path]]:
    """(harness, scenario, dir) for every episode episode_names finds."""
    return [(h, s, source / h / s) for h, s in episode_names(source)]
