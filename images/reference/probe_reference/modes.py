"""Run modes: honest, and deliberate misbehaviours used as negative controls for the orchestrator's checks."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

from probe_reference.progress import say
from probe_reference.rollout import Rollout

# A misreporting mode is a pure rewrite of the honest rollout just before it is written: the agent
# behaves the same on the wire, only its self-report lies. Each receives a private deep copy.
Transform = Callable[[Rollout], Rollout]


def unchanged(rollout: Rollout) -> Rollout:
    return rollout


def hang_forever() -> NoReturn:
    """Never call the model; only a signal (the orchestrator's timeout) ends the run."""
    say("mode hang: sleeping before the first model call until killed")
    while True:
        time.sleep(3600)


@dataclass(frozen=True)
class Mode:
    name: str
    summary: str
    transform: Transform = unchanged
    before_first_call: Callable[[], None] | None = None


MODES: dict[str, Mode] = {
    mode.name: mode
    for mode in (
        Mode("honest", "report exactly what happened"),
        Mode(
            "hang",
            "sleep before the first model call until killed (orchestrator timeout)",
            unchanged,
            hang_forever,
        ),
        # Misreporting modes slot in here, e.g. Mode("drop-failed-attempt", "…", drop_first_failed).
    )
}
