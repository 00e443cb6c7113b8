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
    """No name lookup, connect or request toward anything but the provider (telemetry, update checks).

    What it can see: name lookups (the proxy is the pod's only resolver) and requests that reach the proxy. A
    connect to an IP literal fails in the kernel (the pod has only loopback) and leaves no event, so it cannot
    leak, but it is not witnessed either: this check does not say the harness never tried one.
    """
    return [f"{e['kind']} {e['target']}" + (f" ({e['detail']})" if e.get("detail") else "") for e in ev.w.of("egress")]
