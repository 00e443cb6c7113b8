"""Drift: the checks whose status changed per scenario between two runs of one harness (pin and another release)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.evidence import FormatError, load_json

__all__ = ["Change", "DriftReport", "compare_results", "compare_runs"]


@dataclass(frozen=True)
class Change:
    scenario: str
    check: str
    tier: str
    before: str  # status in the pinned run ("absent" when the check was not in that result)
    after: str

    @property
    def regression(self) -> bool:
        """A check that did not fail at the pin and fails now."""
        return self.after == "fail" and self.before != "fail"


@dataclass(frozen=True)
class DriftReport:
    harness: str
    changes: list[Change]
    verdicts: dict[str, tuple[str, str]]  # scenario -> (pinned verdict, other verdict)
    errors: list[str]  # an episode that errored or is missing in either run: nothing can be said of it

    @property
    def p0_regressions(self) -> list[Change]:
        return [c for c in self.changes if c.regression and c.tier == "P0"]

    @property
    def exit_code(self) -> int:
        return 2 if self.errors else 1 if self.p0_regressions else 0


def _results(run: Path, harness: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for path in sorted((run / harness).glob("*/scenario_result.json")):
        try:
            out[path.parent.name] = load_json(path, "scenario-result/v1")
        except FormatError as exc:
            out[path.parent.name] = {"verdict": "error", "checks": [], "unreadable": str(exc)[:300]}
    return out


def compare_runs(harness: str, pinned: Path, other: Path) -> DriftReport:
    """Changes per scenario between two run directories (each episode's scenario_result.json)."""
    return compare_results(harness, _results(pinned, harness), _results(other, harness), f"{pinned}, {other}")


def compare_results(
    harness: str, before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]], where: str
) -> DriftReport:
    """Changes per scenario between two sets of scenario results (scenario name -> result, as a run's
    scenario_result.json or its summary's entry holds it), scenarios in name order and checks in the pinned
    result's order; `where` names the two runs in an error."""
    changes: list[Change] = []
    verdicts: dict[str, tuple[str, str]] = {}
    errors: list[str] = []
    if not before and not after:
        errors.append(f"neither run holds a result of harness {harness!r} ({where})")
    for scenario in sorted(set(before) | set(after)):
        a, b = before.get(scenario), after.get(scenario)
        if a is None or b is None:
            errors.append(f"{scenario}: no result in the {'pinned' if a is None else 'other'} run")
            continue
        verdicts[scenario] = (a["verdict"], b["verdict"])
        for side, result in (("pinned", a), ("other", b)):
            if result["verdict"] == "error":
                why = result.get("unreadable") or result.get("execution", {}).get("error") or "episode error"
                errors.append(f"{scenario}: the {side} run errored: {why}")
        old = {c["id"]: c for c in a["checks"]}
        new = {c["id"]: c for c in b["checks"]}
        for check_id in [*old, *(k for k in new if k not in old)]:
            was, now = old.get(check_id), new.get(check_id)
            s_was = was["status"] if was else "absent"
            s_now = now["status"] if now else "absent"
            if s_was != s_now:
                tier = (now or was or {}).get("tier", "P0")
                changes.append(Change(scenario, check_id, str(tier), s_was, s_now))
    return DriftReport(harness, changes, verdicts, errors)
