"""docs/gym-comparison.md names only checks the registry has, at the tiers the registry gives them.

The page is written by hand (it reads another project's check ids), so the parts of it that are ours are held to
the registry: a renamed check, or one moved between P0 and P1, makes this fail until the page says so.
"""

from __future__ import annotations

import re
from pathlib import Path

from orchestrator.checks import REGISTRY

PAGE = Path(__file__).resolve().parents[3] / "docs" / "gym-comparison.md"
_ID = re.compile(r"`([a-z_]+\.[a-z_]+)`")  # a check id; a file name (`scenario_result.json`) is no check
_FILE = ("json", "md", "html", "xml")
_TIERED = re.compile(r"`([a-z_]+\.[a-z_]+)`,? \(?(P[01])\b")


def _our_cells() -> list[str]:
    """The harness-probe column of every comparison table (the one before the status)."""
    cells: list[str] = []
    for line in PAGE.read_text().splitlines():
        cols = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cols) < 3 or not line.startswith("|") or set(cols[0]) <= {"-", " "} or cols[-2] == "harness-probe":
            continue
        if cols[-2].startswith("as "):  # "as `model.reached` ... above": Gym's ids, pointed back to their rows
            continue
        cells.append(cols[-2])
    return cells


def test_every_check_the_page_names_is_registered() -> None:
    cells = _our_cells()
    assert len(cells) > 80  # the three tables were read, not skipped
    named = {m for cell in cells for m in _ID.findall(cell) if m.rsplit(".", 1)[1] not in _FILE}
    assert named - set(REGISTRY) == set()
    assert {"attempts.exchange", "ownership.wire_sessions", "witness.faults_played"} <= named


def test_every_tier_the_page_gives_is_the_registrys() -> None:
    text = PAGE.read_text()
    tiers = _TIERED.findall(text)
    assert ("compaction.recorded", "P1") in tiers
    assert [(c, t) for c, t in tiers if c in REGISTRY and REGISTRY[c].tier != t] == []
