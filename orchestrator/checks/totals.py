"""The behavioral check on token totals: session, step and call counts agree with each other and with the wire."""

from __future__ import annotations

from typing import Any

from orchestrator.checks.attempts import TOKEN_FIELDS
from orchestrator.checks.evidence import Evidence
from orchestrator.checks.join import dicts, join_calls, model_calls, rollout_key, witness_key
from orchestrator.checks.model import Kind, Unverifiable, check

__all__: list[str] = []

Counts = dict[str, int | None]


def _wire_counts(usage: Any) -> Counts:
    """A reply's usage in rollout terms; a Messages reply's total (not sent) is prompt + completion."""
    if not isinstance(usage, dict):
        return dict.fromkeys(TOKEN_FIELDS)
    counts: Counts = {f: usage.get(f) for f in TOKEN_FIELDS}
    if counts["total"] is None and isinstance(usage.get("prompt"), int) and isinstance(usage.get("completion"), int):
        counts["total"] = usage["prompt"] + usage["completion"]
    return counts


def _sum(parts: list[Counts], field: str) -> int | None:
    """The sum of one count over parts; unknown (None) as soon as one part is unknown: null is never read as 0."""
    values = [p.get(field) for p in parts]
    if any(not isinstance(v, int) for v in values):
        return None
    return sum(v for v in values if isinstance(v, int))


def _compare(where: str, recorded: Any, parts: list[Counts], against: str, *, wire: bool) -> list[str]:
    """Each recorded count against the sum of parts. On the wire a count no part carried is known to be absent, so
    a recorded number for it is made up; among the harness's own call counts a null is only unrecorded."""
    if not isinstance(recorded, dict):
        return []
    reasons = []
    for f in TOKEN_FIELDS:
        got, want = recorded.get(f), _sum(parts, f)
        if got is None:
            continue  # not recorded: an unknown, which tokens.fields and the gaps account for
        if want is None:
            if wire and parts and all(p.get(f) is None for p in parts):
                reasons.append(f"{where}: {f} {got!r}, but {against} carried no {f} count at all")
            continue  # some parts unknown: no sum to hold the record to
        if got != want:
            reasons.append(f"{where}: {f} {got!r}, {against} sum to {want}")
    return reasons


@check(
    "tokens.totals_match",
    kind=Kind.BEHAVIORAL,
    tier="P1",
    evidence=("E2",),
    location="$.invocations[*].token_totals",
    needs=("rollout", "witness"),
    depends_on=("tokens.fields",),
)
def tokens_totals_match(ev: Evidence) -> list[str]:
    """Session totals, per-step counts and per-call counts agree with each other and with the usage the wire carried.

    Lies caught: a session total that is not the sum of the usage the provider sent (Hermes records only totals),
    a step count that is not its attempts' sum, and a count where the wire carried none (null read as 0). Failed
    attempts carried no usage and add nothing; a sum over an unknown count is unknown, never a smaller number.
    Both sides sum the same calls: a session's totals cover its side calls (summarization) that it records as
    its own, on the wire as in its calls' counts.
    """
    invocations, steps = dicts(ev.r.get("invocations")), dicts(ev.r.get("steps"))
    if not any("token_totals" in i for i in invocations) and not any("token_stats" in s for s in steps):
        # Per-call counts alone are tokens.match's; with no totals there is nothing here to hold, and no pass.
        raise Unverifiable("gap tokens.totals_unrecorded: the harness records no session or step token totals")
    joined = join_calls(ev)
    wire_of = {id(c): _wire_counts(a.get("usage")) for c, a in joined.pairs}
    calls = {c.get("model_call_id"): c for c in model_calls(ev)}
    reasons = []
    for inv in invocations:
        if "token_totals" not in inv:
            continue
        where = f"invocation {inv.get('invocation_id')} token_totals"
        if len(invocations) == 1:
            # The only session: its totals cover every model reply the wire carried, recorded as a call or not, and
            # the side replies (a compaction's summarization) it records as calls of its own: the very calls whose
            # token_stats the totals are held to below. Model replies alone would fail every honest harness that
            # counts its summarization calls in its session totals, and compacts.
            wire = [_wire_counts(a.get("usage")) for a in ev.w.attempts("model") if witness_key(a)[0] == "ok"]
            wire += [
                wire_of[id(c)]
                for c, a in joined.pairs
                if a.get("kind") != "model"
                and c.get("invocation_id") == inv.get("invocation_id")
                and rollout_key(c)[0] == "ok"
            ]
        else:
            owned = [c for c in calls.values() if c.get("invocation_id") == inv.get("invocation_id")]
            wire = [wire_of[id(c)] for c in owned if id(c) in wire_of and rollout_key(c)[0] == "ok"]
        reasons += _compare(where, inv["token_totals"], wire, "the replies on the wire", wire=True)
        owned_stats = [
            c.get("token_stats") or {}
            for c in calls.values()
            if c.get("invocation_id") == inv.get("invocation_id") and rollout_key(c)[0] == "ok"
        ]
        reasons += _compare(where, inv["token_totals"], owned_stats, "its calls' token_stats", wire=False)
    for st in steps:
        if "token_stats" not in st:
            continue
        where = f"step {st.get('step_no')} of {st.get('invocation_id')} token_stats"
        held = [calls[r] for r in st.get("model_call_refs") or [] if r in calls]
        oks = [c for c in held if rollout_key(c)[0] == "ok"]
        unjoined: Counts = dict.fromkeys(TOKEN_FIELDS)
        on_wire = [wire_of.get(id(c), unjoined) for c in oks]
        reasons += _compare(where, st["token_stats"], on_wire, "its replies on the wire", wire=True)
        stats = [c.get("token_stats") or {} for c in oks]
        reasons += _compare(where, st["token_stats"], stats, "its calls' token_stats", wire=False)
    return reasons
