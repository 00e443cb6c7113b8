"""The CI phase budget: the phases the last `make test` timed (probe-out/ci-phases.json), against 90 minutes.

    python -m tests.bench.ci_budget [PATH]

Prints each phase's seconds and share of the budget, then what the goldens would take as the harnesses and
scenarios grow (golden time scales with harnesses x scenarios; the other phases barely move), for a run of
every golden and for one that changed a single harness. Nothing is asserted: the record may be from a loaded or
a partial run, which it says (`goldens.why`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.phases import BUDGET_SECONDS

DEFAULT = Path(__file__).resolve().parents[2] / "probe-out" / "ci-phases.json"
# The growth still to come: (harnesses, scenarios) a record was taken with -> what the next issues bring. Catalogue
# II (12 -> 20 scenarios) and the seven new harnesses (10 real -> 17) have landed, so a record taken since holds
# them all and projects as itself; raise the second numbers when more are planned.
GROWTH = {"harnesses": (17, 17), "scenarios": (20, 20)}


def project(record: dict[str, Any]) -> list[tuple[str, float]]:
    """(what, seconds) for the whole run as recorded, every golden grown, and one harness's golden grown."""
    phases = record["phases"]
    goldens = [p for p in phases if p["name"].startswith("golden ")]
    rest = sum(p["seconds"] for p in phases if p not in goldens)
    golden_total = sum(p["seconds"] for p in goldens)
    (h0, h1), (s0, s1) = GROWTH["harnesses"], GROWTH["scenarios"]
    # Integration grows with the scenarios too (the reference catalogue runs them all in every protocol mode).
    integration = sum(p["seconds"] for p in phases if p["name"] == "integration")
    grown_rest = rest + integration * (s1 / s0 - 1)
    per_golden = golden_total / len(goldens) if goldens else 0.0
    # A record of every golden grows by the harnesses still to come; one of fewer (a selection) is scaled to all.
    every = per_golden * max(len(goldens), h0) * h1 / h0 * s1 / s0
    return [
        ("as recorded", rest + golden_total),
        (f"every golden, {h1} harnesses x {s1} scenarios", grown_rest + every),
        (f"one harness changed, {s1} scenarios", grown_rest + per_golden * s1 / s0),
    ]


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else DEFAULT
    print(f"\nCI phase budget ({BUDGET_SECONDS // 60} min), from {path}")
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        print(f"  no record ({exc}); `make test` writes one")
        return 0
    print(f"  goldens: {record['goldens']['why']}")
    for p in record["phases"]:
        state = "" if p["code"] == 0 else f"  FAILED (exit {p['code']})"
        print(f"  {p['name']:<28} {p['seconds']:8.0f} s  {p['seconds'] / BUDGET_SECONDS:6.1%}{state}")
    for what, seconds in project(record):
        verdict = "inside" if seconds <= BUDGET_SECONDS else "OVER"
        print(f"  {what:<48} {seconds:8.0f} s  {seconds / BUDGET_SECONDS:6.1%}  {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
