"""Isolation (E10): the harness talked to nobody but the scripted provider."""

from __future__ import annotations

from orchestrator.checks.evidence import Evidence
from orchestrator.checks.model import Kind, check

__all__: list[str] = []


@check(
    "egress.none",
    kind=Kind.BEHAVIORAL,
    tier="P1",
    evidence=("E10",),
    location="$[?(@.event=='egress')]",
    needs=("witness",),
)
def egress_none(ev: Evidence) -> list[str]:
    """No name lookup, connect or request toward anything but the provider (telemetry, update checks)."""
    return [f"{e['kind']} {e['target']}" + (f" ({e['detail']})" if e.get("detail") else "") for e in ev.w.of("egress")]
