"""Golden episodes captured from real runs of the reference harness, and a way to re-check mutated copies."""

from __future__ import annotations

import copy
import functools
import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.checks import REGISTRY, Evidence, Status, Witness, run_checks, scope_of

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "episodes"


@dataclass
class Episode:
    scenario: dict[str, Any]
    rollout: dict[str, Any]
    witness: list[dict[str, Any]]
    markers: dict[str, str]
    execution: dict[str, Any] | None = None  # how the reference process ended in that run (exit codes as seen)
    # The same scenario played over the other transport (`run --compare-stream`): its rollout and witness.
    twin: tuple[dict[str, Any], list[dict[str, Any]]] | None = None

    def copy(self) -> Episode:
        return copy.deepcopy(self)

    def evaluate(self) -> dict[str, tuple[Status, list[str]]]:
        ev = Evidence(
            self.scenario,
            rollout=self.rollout,
            witness=Witness(self.witness),
            markers=self.markers,
            execution=self.execution,
        )
        if self.twin is not None:
            ev.twin_rollout, ev.twin_witness = self.twin[0], Witness(self.twin[1])
        return {r.id: (r.status, r.reasons) for r in run_checks(ev, scope_of(self.scenario, self.execution))}

    def add_event(self, event: dict[str, Any]) -> None:
        self.witness.append(
            {"schema": "probe-witness/v1", "seq": len(self.witness), "at": "2026-01-01T00:00:00Z", **event}
        )


def load_episode(name: str) -> Episode:
    """A reference episode by scenario name, or a real harness's captured episode as `native:<harness>/<name>`."""
    if name.startswith("native:"):
        return _load_native(*name.removeprefix("native:").split("/", 1))
    root = FIXTURES / name
    twin = root / "twin"
    return Episode(
        scenario=json.loads((root / "scenario.json").read_text()),
        rollout=json.loads((root / "rollout.json").read_text()),
        witness=_events(root / "witness.jsonl"),
        markers={p.name: p.read_text() for p in sorted((root / "markers").glob("*"))},
        execution=json.loads((root / "execution.json").read_text()) if (root / "execution.json").is_file() else None,
        twin=(json.loads((twin / "rollout.json").read_text()), _events(twin / "witness.jsonl"))
        if twin.is_dir()
        else None,
    )


def _events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def dependents(check_id: str) -> set[str]:
    """Every check that (transitively) depends on check_id: these fail as `blocked` when it fails."""
    out: set[str] = set()
    for c in REGISTRY.values():  # registration order is dependency order
        if check_id in c.depends_on or out & set(c.depends_on):
            out.add(c.id)
    return out


Mutation = Callable[[Episode], None]


@functools.cache
def _native(harness: str, name: str) -> Episode:
    # Imported here: the captured-episode helpers pull in the harness normalizers, which most tests never need.
    from orchestrator.harnesses import get_harness
    from tests.unit.harnesses import captured

    with tempfile.TemporaryDirectory() as tmp:
        paths = captured.materialize(harness, name, Path(tmp) / name)
        rollout = get_harness(harness).normalize(paths.native)
        markers = {p.name: p.read_text() for p in sorted(paths.markers.glob("*"))} if paths.markers.is_dir() else {}
        return Episode(json.loads(paths.scenario.read_text()), rollout, captured.witness(paths), markers)


def _load_native(harness: str, name: str) -> Episode:
    return _native(harness, name).copy()
