"""The one join of recorded model calls to witnessed attempts, in order, that every wire-facing check reads."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from orchestrator.checks.evidence import Evidence

__all__ = ["Join", "Key", "join_calls", "model_calls", "rollout_key", "witness_key"]

Key = tuple[str, Any]


def witness_key(a: dict[str, Any]) -> Key:
    """Successes are joined by response id; failures by status; a reply that never completed is `interrupted`."""
    status = a.get("status")
    if a.get("ended") == "complete" and isinstance(status, int):
        return ("ok", a.get("response_id")) if 200 <= status < 300 else ("error", status)
    return ("interrupted", None)


def rollout_key(c: dict[str, Any]) -> Key:
    status = c.get("status_code")
    if not c.get("error_category") and isinstance(status, int) and 200 <= status < 300:
        rid = c.get("response_id")
        # A wrongly typed id (an object, a number) is a schema failure named by calls.outcome; here it only
        # has to stay hashable and never equal a real id.
        return ("ok", rid if rid is None or isinstance(rid, str) else f"<{type(rid).__name__}>")
    if isinstance(status, int) and not 200 <= status < 300:
        return ("error", status)
    return ("interrupted", None)


def model_calls(ev: Evidence) -> list[dict[str, Any]]:
    value = ev.r.get("model_calls")
    return [c for c in value if isinstance(c, dict)] if isinstance(value, list) else []


@dataclass
class Join:
    """Recorded calls paired with the witnessed attempts they were, and what could not be paired."""

    pairs: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)
    unmatched: list[dict[str, Any]] = field(default_factory=list)  # recorded calls no attempt answers
    out_of_order: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)  # (call, attempt)
    # Successes of a harness that keeps no response ids are joined by order; when their number differs from
    # the witness's, no pairing of them is evidence, and the checks that read counts must say so (not pass).
    order_join_broken: str | None = None


def join_calls(ev: Evidence) -> Join:
    """Pair each recorded call, in recorded order, with the earliest unused witnessed attempt of the same key.

    Successes pair by response id, failures by status, interrupted attempts by order. A harness that records
    no response id for any success has its successes paired in order. A recorded call that pairs with an
    attempt the wire saw before the attempt of the call recorded before it is out of order: that is a lie
    about order (swapped steps, swapped ids) even when every fact of every call is right.
    """
    # Many checks read the join: it is made once per pair of inputs (a 100,000-call rollout joins in seconds).
    cached = ev.derived.get("join")
    if cached is not None and cached[0] is ev.rollout and cached[1] is ev.witness:
        joined: Join = cached[2]
        return joined
    joined = _join(ev)
    ev.derived["join"] = (ev.rollout, ev.witness, joined)
    return joined


def _join(ev: Evidence) -> Join:
    attempts = ev.w.attempts(None)
    index = {a["attempt_id"]: n for n, a in enumerate(attempts)}
    calls = model_calls(ev)
    oks = [c for c in calls if rollout_key(c)[0] == "ok"]
    by_order = bool(oks) and all(c.get("response_id") is None for c in oks)
    queues: dict[Key, deque[dict[str, Any]]] = {}
    for a in attempts:
        key = witness_key(a)
        if by_order and key[0] == "ok":
            if a["kind"] != "model":
                continue  # auxiliary replies carry ids the harness never needs; by order, only model replies
            key = ("ok", None)
        queues.setdefault(key, deque()).append(a)
    out = Join()
    witnessed_oks = len(queues.get(("ok", None), ())) if by_order else 0
    if by_order and witnessed_oks != len(oks):
        out.order_join_broken = (
            f"the harness records no response ids, so successes can only be joined in order, and it records "
            f"{len(oks)} successes where the wire carried {witnessed_oks}: none of them can be joined"
        )
    last = -1
    for c in calls:
        key = rollout_key(c)
        if out.order_join_broken is not None and key[0] == "ok":
            out.unmatched.append(c)
            continue
        queue = queues.get(key)
        if not queue:
            out.unmatched.append(c)
            continue
        a = queue.popleft()
        out.pairs.append((c, a))
        if index[a["attempt_id"]] < last:
            out.out_of_order.append((c, a))
        last = max(last, index[a["attempt_id"]])
    return out
