"""Waits before retries: whether a retry came no sooner than the provider asked, and whether a recorded wait is the
wait the wire shows."""

from __future__ import annotations

import itertools
from datetime import timedelta
from typing import Any

from orchestrator.checks.evidence import Evidence
from orchestrator.checks.join import certain_pairs
from orchestrator.checks.model import Kind, Unverifiable, check
from orchestrator.checks.times import TimeCache

__all__ = ["EARLY_TOLERANCE", "LATE_TOLERANCE"]

# A retry may arrive this much before the wait asked has passed (the proxy's clock reads the 429's end when it hands it
# over; a client's sleep starts once it has read it): a quarter second, far below every wait the scenarios ask for.
EARLY_TOLERANCE = timedelta(seconds=0.25)
# A recorded wait is the sleep the harness planned; building and sending the retry after it adds time (seconds on a
# loaded machine), so the wire may show up to this much more than the record, never less than EARLY_TOLERANCE under it.
LATE_TOLERANCE = timedelta(seconds=5)


def _asked(a: dict[str, Any]) -> float | None:
    played = a.get("played")
    wait = played.get("retry_after_seconds") if isinstance(played, dict) else None
    return float(wait) if isinstance(wait, int | float) and not isinstance(wait, bool) and wait > 0 else None


def _gaps(ev: Evidence) -> list[tuple[dict[str, Any], dict[str, Any], timedelta | None]]:
    """Each model attempt with the next one (its retry) and the time between the first's end and the second's start."""
    parse = TimeCache().parse
    model = ev.w.attempts("model")
    out = []
    for a, b in itertools.pairwise(model):
        end, start = parse(a.get("completed_at")), parse(b.get("started_at"))
        out.append((a, b, start - end if end is not None and start is not None else None))
    return out


def _s(delta: timedelta | float) -> str:
    seconds = delta.total_seconds() if isinstance(delta, timedelta) else delta
    return f"{seconds:.1f} s" if seconds >= 0.95 else f"{seconds:.2f} s"


@check(
    "retry.waited",
    kind=Kind.BEHAVIORAL,
    tier="P1",
    evidence=("E1",),
    location="$[?(@.event=='attempt')].started_at",
    needs=("witness",),
    scope=("retry_wait",),
)
def retry_waited(ev: Evidence) -> list[str]:
    """After a reply that asked for a wait (Retry-After, retry-after-ms, a quota's window), the next attempt came no
    sooner than asked (0.25 s tolerance), on the wire.

    Not a lie in the record but a harness that does not do what the provider told it, and then often a record that
    says it did (retry.wait_recorded): a retry 0.2 s after a 429 that asked for 3 s is refused again by a real
    provider and spends a request of the quota it was told to wait out.
    """
    reasons = []
    for a, b, gap in _gaps(ev):
        asked = _asked(a)
        if asked is None or gap is None:
            continue
        if gap < timedelta(seconds=asked) - EARLY_TOLERANCE:
            reasons.append(
                f"retried the {a.get('status')} after {_s(gap)} although asked to wait {_s(asked)} "
                f"({a['attempt_id']} answered at {a.get('completed_at')}, {b['attempt_id']} arrived at "
                f"{b.get('started_at')})"
            )
    return reasons


def _recorded_wait(c: dict[str, Any]) -> float | None:
    value = c.get("retry_delay_ms")
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _records_a_wait(ev: Evidence) -> bool:
    calls = ev.r.get("model_calls") if ev.rollout is not None else None
    return isinstance(calls, list) and any(isinstance(c, dict) and _recorded_wait(c) is not None for c in calls)


@check(
    "retry.wait_recorded",
    kind=Kind.BEHAVIORAL,
    evidence=("E1", "E9"),
    location="$.model_calls[*].retry_delay_ms",
    needs=("rollout", "witness"),
    depends_on=("calls.present",),
    scope=("retry_wait",),
    claims=_records_a_wait,
)
def retry_wait_recorded(ev: Evidence) -> list[str]:
    """Each wait the rollout records before a retry is the wait the wire shows between that attempt's end and the
    next attempt's start (never longer than the wire's by 0.25 s, nor shorter by more than 5 s).

    Lie caught: a harness that says it waited the 3 s asked (`retry_delay_ms: 3000`) and retried after 0.2 s, or says
    so of a retry that never came. Applies wherever a rollout records a wait; in a scenario that asks for one and a
    rollout that records none, not applicable with the gap named.
    """
    if not _records_a_wait(ev):
        raise Unverifiable(
            "gap retry.wait_unrecorded: the harness records no wait before its retries, so what it waited is only "
            "the wire's to say (retry.waited)"
        )
    nxt = {id(a): (b, gap) for a, b, gap in _gaps(ev)}
    reasons = []
    # Only calls whose attempt is certain: with one of two 429s dropped, which one a recorded 429 was is a guess, and a
    # wait held to a guess would blame the wait for the missing attempt (attempts.multiset's finding).
    for c, a in certain_pairs(ev):
        recorded = _recorded_wait(c)
        if recorded is None:
            continue
        wait = timedelta(milliseconds=recorded)
        name = c.get("model_call_id")
        if id(a) not in nxt:
            reasons.append(f"{name} records a wait of {_s(wait)} before a retry, and no attempt followed on the wire")
            continue
        b, gap = nxt[id(a)]
        if gap is None:
            continue  # witness times are schema-checked; an unparsable one is not the harness's
        if not wait - EARLY_TOLERANCE <= gap <= wait + LATE_TOLERANCE:
            reasons.append(
                f"{name} records waiting {_s(wait)} before its retry, the wire shows {_s(gap)} "
                f"({a['attempt_id']} to {b['attempt_id']})"
            )
    return reasons
