"""Behavioral checks on model attempts: the rollout's calls against the attempts the witness saw on the wire."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from typing import Any

from orchestrator.checks.evidence import WITHHELD, Evidence, withheld
from orchestrator.checks.join import (
    Key,
    all_ok,
    attempt_keys,
    call_keys,
    join_calls,
    model_calls,
    ok_columns,
    ok_pairs,
    rollout_key,
    witness_key,
)
from orchestrator.checks.model import Kind, check
from orchestrator.evidence.jsonread import strings

__all__ = ["rollout_key", "witness_key"]

TOKEN_FIELDS = ("prompt", "completion", "reasoning", "total", "cached")


def _describe(key: Key) -> str:
    kind, value = key
    return {"ok": f"success {value}", "error": f"HTTP {value} failure", "interrupted": "interrupted attempt"}[kind]


def _calls(ev: Evidence) -> list[dict[str, Any]]:
    return model_calls(ev)


@check(
    "attempts.multiset",
    kind=Kind.BEHAVIORAL,
    evidence=("E1", "E7"),
    location="$.model_calls",
    needs=("rollout", "witness"),
    depends_on=("calls.present",),
)
def attempts_multiset(ev: Evidence) -> list[str]:
    """Every witnessed model attempt is recorded once: successes joined by response id, failures by status."""
    if attempt_keys(ev, "model") == call_keys(ev):
        return []  # the same keys in the same order: the same multisets, decided without counting
    witnessed = Counter(attempt_keys(ev, "model"))
    recorded = Counter(call_keys(ev))
    # A harness may also record calls the provider answered outside the script (title generation, a
    # rejected request): those may appear, but are not required.
    optional = Counter(
        k for a, k in zip(ev.w.attempts(None), attempt_keys(ev, None), strict=True) if a["kind"] != "model"
    )
    # Only the keys whose counts differ are sorted (as strings, for a stable report): most keys match.
    differ = [k for k, w in witnessed.items() if recorded.get(k, 0) != w]
    differ += [k for k, r in recorded.items() if k not in witnessed]
    reasons = []
    for key in sorted(differ, key=str):
        w, r = witnessed.get(key, 0), recorded.get(key, 0)
        if r < w:
            reasons.append(f"{_describe(key)}: witnessed {w} times, recorded {r}")
        elif r > w + optional.get(key, 0):
            reasons.append(f"{_describe(key)}: recorded {r} times, witnessed {w}")
    return reasons


def _joined(ev: Evidence) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Recorded successes paired with the replies they were (by response id, or in order when none has one)."""
    return ok_pairs(ev)


def _same(columns: tuple[list[Any], list[Any]]) -> bool:
    return columns[0] == columns[1]


def _name(call: dict[str, Any]) -> str:
    return str(call.get("response_id") or call.get("model_call_id"))


@check(
    "calls.response_metadata",
    kind=Kind.BEHAVIORAL,
    evidence=("E1",),
    location="$.model_calls[*].finish_reason",
    needs=("rollout", "witness"),
    depends_on=("calls.outcome", "calls.protocol"),
)
def calls_response_metadata(ev: Evidence) -> list[str]:
    """Each recorded success carries the protocol and finish reason of the reply with its response id."""
    if _same(ok_columns(ev, "finish_reason", "finish_reason")) and _same(ok_columns(ev, "protocol", "protocol")):
        return []  # every pair agrees: decided a field at a time
    joined = _joined(ev)
    reasons = []
    for c, a in joined:
        if c.get("finish_reason") != a.get("finish_reason"):
            reasons.append(f"{_name(c)}: finish_reason {c.get('finish_reason')!r}, sent {a.get('finish_reason')!r}")
        if c.get("protocol") != a.get("protocol"):
            reasons.append(f"{_name(c)}: protocol {c.get('protocol')!r}, the request used {a.get('protocol')!r}")
    return reasons


@check(
    "tokens.match",
    kind=Kind.BEHAVIORAL,
    evidence=("E2",),
    location="$.model_calls[*].token_stats",
    needs=("rollout", "witness"),
    depends_on=("tokens.fields",),
)
def tokens_match(ev: Evidence) -> list[str]:
    """Token counts equal the usage each reply carried; where a reply carried none, every count stays null.

    Lie caught besides wrong counts: successes added, dropped or duplicated by a harness that keeps no response
    ids. Those are joined in order; when their number differs from the wire's no pairing is evidence, and the
    check fails rather than compare nothing (a check never improves because the evidence got worse). Nor does one
    success given an invented id turn the order join into an id join that pairs nothing: successes without an id
    beside one with an id are joined with nothing, and that fails too.
    """
    broken = join_calls(ev).order_join_broken
    reasons = [broken] if broken else []
    idless = join_calls(ev).idless
    if idless:
        # Named, so a reason goes with the very calls it is about.
        names = ", ".join(join_calls(ev).idless_names[:5]) + (", ..." if idless > 5 else "")
        reasons.append(
            f"{idless} successes ({names}) are recorded without a response id beside successes recorded with one: "
            "they can be joined neither by id nor in order, so their counts are compared with nothing"
        )
    joined = _joined(ev)
    if not joined and not broken:
        carried = [
            a
            for a, key in zip(ev.w.attempts("model"), attempt_keys(ev, "model"), strict=True)
            if key[0] == "ok" and isinstance(a.get("usage"), dict)
        ]
        if carried:
            # Nothing joined means nothing compared: counts the harness could have recorded and did not are a
            # failure, not a pass on no evidence.
            reasons.append(
                f"the wire carried usage on {len(carried)} replies and no recorded call holds any of it "
                "(no recorded success joins a reply)"
            )
    # The common case, decided at once: every reply's usage is the call's token_stats, both objects.
    stats_all, usages = ok_columns(ev, "token_stats", "usage")
    same = set(map(type, usages)) <= {dict} and usages == stats_all
    for c, a in [] if same else joined:
        usage = a.get("usage")
        stats = c.get("token_stats") or {}
        if isinstance(usage, dict) and isinstance(stats, dict) and _counts(stats) == _counts(usage):
            continue  # the common case, decided at once: every count as the reply carried it
        for f in TOKEN_FIELDS:
            want = usage.get(f) if isinstance(usage, dict) else None
            got = stats.get(f)
            # A total the protocol does not send (Messages) may be derived as prompt + completion: that is
            # arithmetic on reported counts, not an invented one.
            if f == "total" and want is None and isinstance(usage, dict) and got is not None:
                want = (usage.get("prompt") or 0) + (usage.get("completion") or 0)
            if got != want:
                reasons.append(f"{_name(c)}: token_stats.{f} is {got!r}, the reply carried {want!r}")
    keys = call_keys(ev)
    for c, key in [] if all_ok(keys) else zip(_calls(ev), keys, strict=True):
        if key[0] != "ok":
            made_up = {f: v for f, v in (c.get("token_stats") or {}).items() if v is not None}
            if made_up:
                reasons.append(f"{c.get('model_call_id')}: a failed attempt carried no usage, yet records {made_up}")
    return reasons


def _counts(d: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(map(d.get, TOKEN_FIELDS))


def _message(body: Any) -> str | None:
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return str(err["message"])
    return None


@check(
    "errors.payload_retained",
    kind=Kind.BEHAVIORAL,
    evidence=("E7",),
    location="$.model_calls[*].error",
    needs=("rollout", "witness"),
    depends_on=("calls.outcome",),
    scope=("errors_expected",),
)
def errors_payload_retained(ev: Evidence) -> list[str]:
    """Each failed attempt that got an error body keeps that payload (joined by order and status)."""
    # Withheld, cut and reset replies carry no payload to retain: only complete error replies are joined.
    failures = [
        a for a, key in zip(ev.w.attempts("model"), attempt_keys(ev, "model"), strict=True) if key[0] == "error"
    ]
    recorded: dict[Any, list[dict[str, Any]]] = {}
    for c, key in zip(_calls(ev), call_keys(ev), strict=True):
        if key[0] == "error":
            recorded.setdefault(c.get("status_code"), []).append(c)
    used: Counter[Any] = Counter()
    reasons = []
    for a in failures:
        status = a["status"]
        k = used[status]
        used[status] += 1
        candidates = recorded.get(status, [])
        if k >= len(candidates):
            reasons.append(f"{a['attempt_id']} (HTTP {status}): no recorded failed call to hold its payload")
            continue
        kept = candidates[k].get("error")
        message = _message(a.get("response"))
        if kept is None:
            reasons.append(f"{candidates[k].get('model_call_id')} (HTTP {status}): error payload not retained")
        elif message is not None and not _holds(kept, message):
            reasons.append(
                f"{candidates[k].get('model_call_id')} (HTTP {status}): payload lacks the message {message!r}"
            )
    return reasons


def _holds(kept: Any, message: str) -> bool:
    """Whether a recorded payload holds the message: in one of its texts, or in the JSON text it keeps (where a
    newline or a non-ASCII letter of the message is escaped: Google's quota message spans lines)."""
    escaped = json.dumps(message)[1:-1]
    texts = [kept] if isinstance(kept, str) else [*strings(kept), json.dumps(kept)]
    return any(message in t or escaped in t for t in texts)


def _body(attempt: dict[str, Any]) -> Any:
    # The parsed body, not the raw bytes: a client may re-serialize the same request with another key order
    # (Codex does); only a body that is not JSON is compared by its hash.
    return attempt["request"] if attempt.get("request") is not None else attempt.get("request_sha256")


# Tier P0, deliberately (it was P1): the checks credit a harness with retries (steps.witness_attempts places a failed
# attempt and the reply that ended it in one step, E9; errors.payload_retained joins failures in order). That credit
# is only true if the later attempt re-sent the request that failed; a changed request is a new request, and a
# rollout calling it a retry misreports what the harness did. Headers may differ (retry counters), bodies may not.
@check(
    "attempts.retry_identical",
    kind=Kind.BEHAVIORAL,
    tier="P0",
    evidence=("E1",),
    location="$[?(@.event=='attempt')].request",
    needs=("witness",),
    scope=("errors_expected",),
)
def attempts_retry_identical(ev: Evidence) -> list[str]:
    """A retry after a failed attempt resends the identical request body (the harness really retried)."""
    attempts = ev.w.attempts("model")
    keys = attempt_keys(ev, "model")
    reasons = []
    for (prev, nxt), key in zip(itertools.pairwise(attempts), keys, strict=False):
        if key[0] != "ok" and _body(prev) != _body(nxt):
            if withheld(prev, "request") or withheld(nxt, "request"):
                # Equal hashes of the bytes sent would have matched; unequal ones may be the same body re-serialized.
                reasons.append(
                    f"{nxt['attempt_id']} cannot be compared with the failed {prev['attempt_id']}: {WITHHELD}"
                )
            else:
                reasons.append(f"{nxt['attempt_id']} differs from the failed {prev['attempt_id']} it retried")
    return reasons
