"""The check model: typed checks with scope, dependencies and tiers, and the runner that applies them in order."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from orchestrator.evidence.bulk import gc_paused
from orchestrator.evidence.text import bounded, clean

if TYPE_CHECKING:
    from orchestrator.checks.evidence import Evidence

__all__ = ["REGISTRY", "Check", "CheckResult", "Kind", "Status", "Unverifiable", "check", "gate", "run_checks"]


class Status(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    NOT_APPLICABLE = "not_applicable"


class Kind(StrEnum):
    SCHEMA = "schema"
    SEMANTIC = "semantic"
    BEHAVIORAL = "behavioral"
    # How the harness process ended, judged apart from everything it wrote.
    PROCESS = "process"


class Unverifiable(Exception):
    """Raised by a check whose evidence the harness does not put on the wire: not applicable, with the gap named.

    Not a pass: the reason stays on the result, so a report shows what could not be verified and why.
    """


Scope = dict[str, bool]

# What one reason may say. Reasons quote what the harness wrote, and a 10 MB value quoted whole went into
# scenario_result.json, every report and the episode page; the longest any published run's check gave is 662.
REASON_CHARS = 2000
CheckFn = Callable[["Evidence"], list[str]]
# Outside its declared scope a check may still apply to what a rollout claims: a claim no scenario asked for (a
# compaction recorded where none was provoked) is still a claim about the wire, and must not go unjudged.
Claims = Callable[["Evidence"], bool]


@dataclass(frozen=True)
class Check:
    id: str
    kind: Kind
    tier: str  # "P0" | "P1"
    evidence: tuple[str, ...]  # labels E1..E10
    location: str  # JSONPath into the file the check reads
    description: str
    needs: tuple[str, ...]  # inputs read: "rollout", "witness"
    fn: CheckFn
    depends_on: tuple[str, ...] = ()
    scope: tuple[str, ...] = ()  # scope flags that must all be true for the check to apply
    claims: Claims | None = None  # outside the scope, it applies when this is true of the evidence (docstring: when)

    def applies(self, scope: Scope, ev: Evidence | None = None) -> bool:
        if all(scope.get(flag, False) for flag in self.scope):
            return True
        return self.claims is not None and ev is not None and self.claims(ev)


@dataclass
class CheckResult:
    id: str
    kind: str
    tier: str
    evidence: list[str]
    location: str
    status: Status
    reasons: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "tier": self.tier,
            "evidence": self.evidence,
            "location": self.location,
            "status": str(self.status),
            "reasons": self.reasons,
        }


REGISTRY: dict[str, Check] = {}


def check(
    id: str,
    *,
    kind: Kind,
    tier: str = "P0",
    evidence: tuple[str, ...],
    location: str,
    needs: tuple[str, ...],
    depends_on: tuple[str, ...] = (),
    scope: tuple[str, ...] = (),
    claims: Claims | None = None,
) -> Callable[[CheckFn], CheckFn]:
    """Register a check function; its docstring is the check's description."""

    def register(fn: CheckFn) -> CheckFn:
        if id in REGISTRY:
            raise ValueError(f"duplicate check id {id}")
        missing = [d for d in depends_on if d not in REGISTRY]
        if missing:
            raise ValueError(f"{id} depends on checks registered later or unknown: {missing}")
        REGISTRY[id] = Check(
            id, kind, tier, evidence, location, (fn.__doc__ or "").strip(), needs, fn, depends_on, scope, claims
        )
        return fn

    return register


def run_checks(ev: Evidence, scope: Scope, checks: list[Check] | None = None) -> list[CheckResult]:
    """Apply checks in registration order, which is dependency order; a crash in one is that check's failure."""
    with gc_paused():  # large rollouts: indexes of 100,000 entries are built without quadratic GC walks
        return _run_checks(ev, scope, checks)


def _run_checks(ev: Evidence, scope: Scope, checks: list[Check] | None) -> list[CheckResult]:
    ev.derived.clear()  # derived data is shared between the checks of one run only: inputs may change between runs
    results: dict[str, CheckResult] = {}
    for c in checks if checks is not None else list(REGISTRY.values()):
        res = CheckResult(c.id, str(c.kind), c.tier, list(c.evidence), c.location, Status.PASS)
        results[c.id] = res
        if not c.applies(scope, ev):
            res.status = Status.NOT_APPLICABLE
            continue
        blocked = [d for d in c.depends_on if d in results and results[d].status == Status.FAIL]
        if blocked:
            # A blocked check never reads its input: its verdict is its dependency's.
            res.status, res.reasons = Status.FAIL, [f"blocked by {', '.join(blocked)}"]
            continue
        unavailable = [ev.unavailable(n) for n in c.needs if ev.unavailable(n)]
        if unavailable:
            res.status, res.reasons = Status.FAIL, [_said(f"required input unavailable: {u}") for u in unavailable]
            continue
        try:
            reasons = c.fn(ev)
        except Unverifiable as gap:
            res.status, res.reasons = Status.NOT_APPLICABLE, [_said(str(gap))]
            continue
        except Exception as exc:  # a checker bug must not hide the other checks' verdicts
            reasons = [f"checker error: {type(exc).__name__}: {exc}"]
        if reasons:
            # Reasons quote harness text (ids, names, file names): made safe here, once, for every sink after us.
            res.status, res.reasons = Status.FAIL, list(map(_said, reasons))
    return list(results.values())


def _said(reason: str) -> str:
    return bounded(clean(reason), REASON_CHARS)


def gate(results: list[CheckResult], tier: str = "P0") -> bool:
    """The gate: every applicable check of the tier passes."""
    return all(r.status != Status.FAIL for r in results if r.tier == tier)
