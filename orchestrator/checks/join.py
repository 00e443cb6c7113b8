"""The one join of recorded model calls to witnessed attempts, in order, that every wire-facing check reads."""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import repeat
from operator import itemgetter
from typing import Any, TypeVar

from orchestrator.checks.evidence import Evidence
from orchestrator.checks.fault_kinds import UNUSABLE

__all__ = [
    "Join",
    "Key",
    "all_2xx",
    "all_ok",
    "attempt_column",
    "attempt_keys",
    "call_column",
    "call_keys",
    "certain_pairs",
    "column",
    "decided",
    "dicts",
    "held_pairs",
    "join_calls",
    "loose_failures",
    "model_calls",
    "ok_columns",
    "ok_pairs",
    "ok_sides",
    "order_pairs_beside",
    "rollout_key",
    "shared",
    "witness_key",
]

Key = tuple[str, Any]
_Entry = tuple[int, dict[str, Any]]
T = TypeVar("T")


def shared(ev: Evidence, name: str, make: Callable[[Evidence], T]) -> T:
    """What several checks derive from the same inputs, made once per pair of inputs (a 100,000-call rollout
    is read by twenty checks: each re-deriving its indexes would cost more than the checks themselves)."""
    cached = ev.derived.get(name)
    if cached is not None and cached[0] is ev.rollout and cached[1] is ev.witness:
        value: T = cached[2]
        return value
    value = make(ev)
    ev.derived[name] = (ev.rollout, ev.witness, value)
    return value


def decided(fast: Callable[[], bool]) -> bool:
    """Whether a check's fast look at the honest case finds nothing to report. Anything it did not expect (a
    missing field, a value of another type) is left to the check's full reading, which names it as it always did."""
    try:
        return fast()
    except Exception:
        return False


def column(records: list[dict[str, Any]], key: str) -> list[Any]:
    """Each record's value of key (None where absent), read in C: a 100,000-entry look costs one pass, not 100,000
    method calls from Python. Every record must be an object (else TypeError: fast looks run under `decided`)."""
    return list(map(dict.get, records, repeat(key)))


# One column per field read, made on first use: a pass over 100,000 records costs about what fetching them from
# memory costs, so a field is read once for all the checks that look at it, and no field is read that none does.
def call_column(ev: Evidence, field: str) -> list[Any]:
    """field of each of model_calls(ev), None where absent (shared: do not modify)."""
    return shared(ev, f"call_column:{field}", lambda e: column(model_calls(e), field))


def attempt_column(ev: Evidence, field: str) -> list[Any]:
    """field of each of ev.w.attempts(None), None where absent (shared: do not modify)."""
    return shared(ev, f"attempt_column:{field}", lambda e: column(e.w.attempts(None), field))


def all_2xx(statuses: list[Any]) -> bool:
    """Whether every status is a 2xx."""
    # Exactly int: a bool is an int to isinstance, and the per-entry keys judge it so; such a list is left to them.
    return set(map(type, statuses)) == {int} and min(statuses) >= 200 and max(statuses) < 300


def _calls_all_ok(ev: Evidence) -> list[Any] | None:
    """The response ids when every call is an ok key of its own id (a 2xx, no error category, an id that is a
    string or null), at once; None when any is not (then each call's rollout_key is taken)."""
    rids = call_column(ev, "response_id")
    if (
        all_2xx(call_column(ev, "status_code"))
        and not any(call_column(ev, "error_category"))
        and set(map(type, rids)) <= {str, type(None)}
    ):
        return rids
    return None


def _attempts_all_ok(ev: Evidence) -> list[Any] | None:
    """The response ids when every attempt completed with a 2xx a client could use, at once; None otherwise (each
    witness_key taken)."""
    ended = attempt_column(ev, "ended")
    if (
        ended.count("complete") == len(ended)
        and all_2xx(attempt_column(ev, "status"))
        and UNUSABLE.isdisjoint(attempt_column(ev, "fault"))
    ):
        return attempt_column(ev, "response_id")
    return None


def witness_key(a: dict[str, Any]) -> Key:
    """Successes are joined by response id; failures by status; a reply that never completed is `interrupted`, and so
    is a 200 no client could take as a turn (a stream with a malformed event or an error event, an HTML page)."""
    status = a.get("status")
    if a.get("ended") == "complete" and isinstance(status, int):
        if not 200 <= status < 300:
            return ("error", status)
        return ("interrupted", None) if a.get("fault") in UNUSABLE else ("ok", a.get("response_id"))
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
    """The recorded calls that are objects, in order (shared: do not modify)."""
    return shared(ev, "model_calls", _model_calls)


def _model_calls(ev: Evidence) -> list[dict[str, Any]]:
    return dicts(ev.r.get("model_calls"))


def dicts(value: Any) -> list[dict[str, Any]]:
    """The objects of a rollout's list, in order: the harness's JSON may hold any value where a list belongs."""
    return [x for x in value if isinstance(x, dict)] if isinstance(value, list) else []


def call_keys(ev: Evidence) -> list[Key]:
    """rollout_key of each of model_calls(ev), in the same order."""
    return shared(ev, "call_keys", _call_keys)


def _call_keys(ev: Evidence) -> list[Key]:
    calls = model_calls(ev)
    rids = _calls_all_ok(ev) if calls else None
    return [rollout_key(c) for c in calls] if rids is None else list(zip(repeat("ok"), rids))


def attempt_keys(ev: Evidence, kind: str | None = "model") -> list[Key]:
    """witness_key of each of ev.w.attempts(kind), in the same order."""
    return shared(ev, f"attempt_keys:{kind}", lambda e: _attempt_keys(e, kind))


def _attempt_keys(ev: Evidence, kind: str | None) -> list[Key]:
    attempts = ev.w.attempts(None)
    if kind is None:
        rids = _attempts_all_ok(ev) if attempts else None
        return [witness_key(a) for a in attempts] if rids is None else list(zip(repeat("ok"), rids))
    if attempt_column(ev, "kind").count(kind) == len(attempts):
        return list(attempt_keys(ev, None))  # every attempt of this kind: the same keys
    # Taken from the keys of all attempts (made once), in the same arrival order.
    return [k for a, k in zip(attempts, attempt_keys(ev, None), strict=True) if a["kind"] == kind]


@dataclass
class Join:
    """Recorded calls paired with the witnessed attempts they were, and what could not be paired."""

    pairs: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)
    unmatched: list[dict[str, Any]] = field(default_factory=list)  # recorded calls no attempt answers
    out_of_order: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)  # (call, attempt)
    # Successes of a harness that keeps no response ids are joined by order; when their number differs from
    # the witness's, no pairing of them is evidence, and the checks that read counts must say so (not pass).
    order_join_broken: str | None = None
    # Successes recorded without an id beside successes recorded with one: joined neither by id nor by order.
    idless: int = 0
    idless_names: list[str] = field(default_factory=list)  # their model_call_ids, for the reasons that name them
    keys: list[Key] = field(default_factory=list)  # rollout_key of each pair's call, in the order of pairs
    # Every call is the attempt at its own position, key for key (the honest case): nothing is left unpaired, and
    # each key is recorded exactly as often as the wire shows it.
    positional: bool = False


def join_calls(ev: Evidence) -> Join:
    """Pair each recorded call, in recorded order, with the earliest unused witnessed attempt of the same key.

    Successes pair by response id, failures by status, interrupted attempts by order. A harness that records
    no response id for any success has its successes paired in order; where some successes have ids, one without
    pairs with nothing (a reply without an id is no evidence of which call it was). A recorded call that pairs with an
    attempt the wire saw before the attempt of the call recorded before it is out of order: that is a lie
    about order (swapped steps, swapped ids) even when every fact of every call is right.
    """
    # Many checks read the join: it is made once per pair of inputs.
    return shared(ev, "join", _join)


def _join(ev: Evidence) -> Join:
    attempts = ev.w.attempts(None)
    calls = model_calls(ev)
    keys = call_keys(ev)
    if all_ok(keys):  # every call a success: the ids are a column already read
        oks = calls
        by_order = bool(oks) and call_column(ev, "response_id").count(None) == len(oks)
    else:
        oks = [c for c, key in zip(calls, keys, strict=True) if key[0] == "ok"]
        by_order = bool(oks) and all(c.get("response_id") is None for c in oks)
    if not by_order and keys == attempt_keys(ev, None) and len(set(attempt_column(ev, "attempt_id"))) == len(attempts):
        # The calls are the attempts, key for key in the wire's order (the honest case): the earliest unused attempt
        # of each call's key is the one at its own position, so every call pairs with it, in order (attempt ids
        # unique: each attempt's arrival index is its position).
        return Join(pairs=list(zip(calls, attempts, strict=True)), keys=list(keys), positional=True)
    index = {a["attempt_id"]: n for n, a in enumerate(attempts)}
    # Each attempt queued with its arrival index, so order is judged without a second lookup. Most keys (response
    # ids) are unique: such a key holds its one entry as is, and becomes a queue only when a second one comes.
    queues: dict[Key, _Entry | deque[_Entry]] = {}
    for a, key in zip(attempts, attempt_keys(ev, None), strict=True):
        if by_order and key[0] == "ok":
            if a["kind"] != "model":
                continue  # auxiliary replies carry ids the harness never needs; by order, only model replies
            key = ("ok", None)
        entry = (index[a["attempt_id"]], a)
        queued = queues.get(key)
        if queued is None:
            queues[key] = entry
        elif isinstance(queued, tuple):
            queues[key] = deque((queued, entry))
        else:
            queued.append(entry)
    out = Join()
    queued = queues.get(("ok", None))
    witnessed_oks = (0 if queued is None else 1 if isinstance(queued, tuple) else len(queued)) if by_order else 0
    if by_order and witnessed_oks != len(oks):
        out.order_join_broken = (
            f"the harness records no response ids, so successes can only be joined in order, and it records "
            f"{len(oks)} successes where the wire carried {witnessed_oks}: none of them can be joined"
        )
    broken = out.order_join_broken is not None
    pairs, unmatched, out_of_order, pair_keys = out.pairs, out.unmatched, out.out_of_order, out.keys
    last = -1
    for c, key in zip(calls, keys, strict=True):
        # A success recorded without its id, beside successes recorded with one, joins nothing: by id it would pair
        # with any reply that carried none (a models list, a title), and by order only when no success has an id.
        # One invented id must not turn an order join that fails into an id join that compares nothing.
        if key[0] == "ok" and (broken or (not by_order and key[1] is None)):
            if not broken:
                out.idless += 1
                out.idless_names.append(str(c.get("model_call_id")))
            unmatched.append(c)
            continue
        queued = queues.get(key)
        if isinstance(queued, tuple):
            del queues[key]
            n, a = queued
        elif queued:
            n, a = queued.popleft()
        else:
            unmatched.append(c)
            continue
        pairs.append((c, a))
        pair_keys.append(key)
        if n < last:
            out_of_order.append((c, a))
        elif n > last:
            last = n
    return out


def certain_pairs(ev: Evidence) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Pairs whose join names one attempt for certain: a success by its id, a success of a harness that keeps no ids
    joined in order (the join pairs those only when they are exactly as many as the wire's model replies), or a
    failure whose status the rollout records exactly as often as the wire shows it. With one of two 429s dropped,
    which one a recorded 429 was is a guess, and a time compared against a guess would blame the times for a
    missing attempt (multiset's finding)."""
    joined = join_calls(ev)
    if joined.positional:
        return joined.pairs  # every key recorded exactly as often as witnessed: each pair is certain
    witnessed = Counter(attempt_keys(ev, None))
    recorded = Counter(call_keys(ev))
    out = []
    for (c, a), key in zip(joined.pairs, joined.keys, strict=True):
        # ("ok", None) pairs only in an order join whose numbers agree (join_calls leaves every other id-less success
        # unpaired): the n-th recorded success is the n-th model reply.
        by_id = key[0] == "ok" and c.get("response_id") is not None
        if key == ("ok", None) or by_id or witnessed[key] == recorded[key]:
            out.append((c, a))
    return out


def loose_failures(ev: Evidence) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Recorded failures the join left unpaired, each with the failed attempt it stands for in order: those the
    join left over, when their numbers agree (a failure recorded without its status joins nothing by key).

    Their other facts (protocol, category, request) are then still held to the wire: a missing status is
    attempts.multiset's finding, and must not leave every other fact of the call unjudged. With unequal numbers
    which attempt a call was is a guess, and nothing is paired."""
    joined = join_calls(ev)
    if not joined.unmatched:
        return []
    calls = [c for c in joined.unmatched if rollout_key(c)[0] != "ok"]
    used = {id(a) for _, a in joined.pairs}
    left = [
        a
        for a, key in zip(ev.w.attempts(None), attempt_keys(ev, None), strict=True)
        if key[0] != "ok" and id(a) not in used
    ]
    # The scripted attempts first: requests the proxy refused outside the script (a 404 for a models list) are
    # rarely recorded as calls, and would otherwise make the numbers differ.
    for attempts in ([a for a in left if a["kind"] == "model"], left):
        if calls and len(calls) == len(attempts):
            return list(zip(calls, attempts, strict=True))
    return []


def ok_pairs(ev: Evidence) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Recorded successes paired with the replies they were (by response id, or in order when none has one)."""
    return shared(ev, "ok_pairs", _ok_pairs)


def _ok_pairs(ev: Evidence) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    joined = join_calls(ev)
    if all_ok(joined.keys):
        return joined.pairs
    return [p for p, key in zip(joined.pairs, joined.keys, strict=True) if key[0] == "ok"]


def all_ok(keys: list[Key]) -> bool:
    """Whether every key is a success's."""
    return not keys or set(map(itemgetter(0), keys)) == {"ok"}


def ok_sides(ev: Evidence) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """ok_pairs(ev) as two aligned lists, the calls and their replies (shared: do not modify)."""
    return shared(ev, "ok_sides", _ok_sides)


def _ok_sides(ev: Evidence) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    joined = join_calls(ev)
    if joined.positional and all_ok(joined.keys):
        return model_calls(ev), ev.w.attempts(None)  # the pairs are the calls and attempts, position by position
    pairs = ok_pairs(ev)
    return list(map(itemgetter(0), pairs)), list(map(itemgetter(1), pairs))


def ok_columns(ev: Evidence, call_field: str, attempt_field: str) -> tuple[list[Any], list[Any]]:
    """One field of each call of ok_pairs(ev) and one of its reply, as two aligned columns."""
    joined = join_calls(ev)
    if joined.positional and all_ok(joined.keys):
        return call_column(ev, call_field), attempt_column(ev, attempt_field)
    calls, replies = ok_sides(ev)
    return column(calls, call_field), column(replies, attempt_field)


def order_pairs_beside(ev: Evidence) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Where the order join is broken, the recorded successes other than the calls compaction records name (a
    harness that keeps no response ids and records its summarization calls among its successes: OpenCode) paired,
    in order, with the policy replies, when their numbers agree (the order join's own premise); none otherwise."""
    if join_calls(ev).order_join_broken is None:
        return []
    records = ev.r.get("compactions")
    helpers = {
        ref
        for rec in (records if isinstance(records, list) else [])
        if isinstance(rec, dict) and isinstance(rec.get("model_call_refs"), list)
        for ref in rec["model_call_refs"]
        if not isinstance(ref, (dict, list))
    }
    calls = [
        c
        for c, key in zip(model_calls(ev), call_keys(ev), strict=True)
        # An id that is an object or a list is named by no reference.
        if key[0] == "ok"
        and (isinstance(c.get("model_call_id"), (dict, list)) or c.get("model_call_id") not in helpers)
    ]
    replies = [a for a, key in zip(ev.w.attempts("model"), attempt_keys(ev, "model"), strict=True) if key[0] == "ok"]
    return list(zip(calls, replies, strict=True)) if len(calls) == len(replies) else []


def held_pairs(ev: Evidence) -> tuple[list[tuple[dict[str, Any], dict[str, Any]]], str | None]:
    """The pairs a call's own facts (its times, its bodies, the time of its step) are held to, and why the rest are
    held to nothing where the order join is broken and nothing pairs beside it (else None): the certain pairs
    (certain_pairs), and where the order join is broken the successes paired in order beside the calls compaction
    records name (order_pairs_beside)."""
    return shared(ev, "held_pairs", _held_pairs)


def _held_pairs(ev: Evidence) -> tuple[list[tuple[dict[str, Any], dict[str, Any]]], str | None]:
    pairs = certain_pairs(ev)
    joined = join_calls(ev)
    broken = joined.order_join_broken
    if not broken:
        return pairs, None
    beside = order_pairs_beside(ev)
    return [*pairs, *beside], None if beside else broken
