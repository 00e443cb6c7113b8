"""What a harness's self-report gets wrong, in words, and its evidence labels' cells: read by every report and page."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from orchestrator.checks.catalogue import LABELS, LIES
from orchestrator.report.table import HarnessView

__all__ = ["LABEL_IDS", "Wrong", "Wrongs", "label_cell", "label_cells", "labels_of", "wrongs"]

LABEL_IDS = tuple(label.id for label in LABELS)
# Scenario names a finding lists before it counts the rest: above the catalogue's size, so a catalogue's findings
# name every scenario, while an audit of 10,000 failing episodes neither holds nor prints 10,000 names a line.
SHOWN_SCENARIOS = 30


def _blocked(check: dict[str, Any]) -> bool:
    return bool(check["reasons"]) and check["reasons"][0].startswith("blocked")


@dataclass
class Wrong:
    """One failing check of a harness: the lie in words, where it was seen, and the first example."""

    check: str
    lie: str
    scenarios: list[str] = field(default_factory=list)  # the first SHOWN_SCENARIOS it failed in
    count: int = 0  # the scenarios it failed in, all of them
    example_scenario: str = ""
    example: str = ""  # the first reason of the first scenario it failed in

    def where(self, name: Callable[[str], str] = str) -> str:
        """The scenarios it failed in, each written by `name`, the ones past those listed counted."""
        listed = ", ".join(map(name, self.scenarios))
        more = self.count - len(self.scenarios)
        return f"{listed} and {more:,} more" if more > 0 else listed


@dataclass
class Wrongs:
    items: list[Wrong]
    blocked: int  # failing results blocked by another failure (not listed: their blocker is)


def wrongs(view: HarnessView) -> Wrongs:
    """Every check that failed (not blocked) in any episode of `view`, in the order first seen; one pass."""
    found: dict[str, Wrong] = {}
    blocked = 0
    for e in view.episodes():
        for c in e["checks"]:
            if c["status"] != "fail":
                continue
            if _blocked(c):
                blocked += 1
                continue
            w = found.get(c["id"])
            if w is None:
                w = found[c["id"]] = Wrong(c["id"], LIES.get(c["id"], c["id"]))
                w.example_scenario = e["scenario"]
                w.example = c["reasons"][0] if c["reasons"] else ""
            w.count += 1
            if w.count <= SHOWN_SCENARIOS:
                w.scenarios.append(e["scenario"])
    return Wrongs(list(found.values()), blocked)


def labels_of(check: dict[str, Any]) -> set[str]:
    """The labels a check result speaks for: a blocked result speaks for none (its blocker is counted), and a
    failed gap check only for the labels its gaps void."""
    if check["status"] == "fail" and _blocked(check):
        return set()
    if check["id"] == "gaps.none_voiding" and check["status"] == "fail":
        # Each reason ends with its labels (checks/rollout_semantic.py): a `(voids ...)` in a gap's own detail is the
        # harness's text, not a label list.
        voided = " ".join(m.group(1) for r in check["reasons"] if (m := re.search(r"\(voids ([^()]*)\)$", str(r))))
        return set(re.findall(r"E10|E[1-9]", voided))
    return set(check.get("evidence", []))


def label_cell(failed: int, passed: bool) -> str:
    """A label's cell: how many of its results failed, else whether any passed (— when none applied)."""
    return f"✗ {failed}" if failed else ("✓" if passed else "—")


# Where a result is counted in its label's tally; any other status (not applicable) is counted nowhere.
_TALLY = {"fail": 0, "pass": 1}


def _tallies(episodes: Iterator[dict[str, Any]]) -> dict[str, list[int]]:
    """Per label: [results failed, results passed]. Counted, not listed: an audit of 10,000 episodes has a million
    results, and the cells need two numbers each."""
    out: dict[str, list[int]] = {k: [0, 0] for k in (*LABEL_IDS, "process")}
    for e in episodes:
        for c in e["checks"]:
            at = _TALLY.get(c["status"])
            if at is None:
                continue
            for label in labels_of(c):
                if label in out:
                    out[label][at] += 1
            if c["kind"] == "process":
                out["process"][at] += 1
    return out


def label_cells(episodes: Iterator[dict[str, Any]]) -> dict[str, str]:
    """Each label's cell (and `process`, the exit status judged apart) over the episodes, as the results matrix."""
    return {k: label_cell(failed, passed > 0) for k, (failed, passed) in _tallies(episodes).items()}
