"""Behavioral checks that join the rollout's tool records to the tool calls the witness saw issued and answered."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from orchestrator.checks.continuation import parsed_arguments
from orchestrator.checks.evidence import WITHHELD, Evidence, withheld
from orchestrator.checks.join import column, decided, shared
from orchestrator.checks.model import Kind, check

__all__: list[str] = []


def _records(ev: Evidence) -> dict[str, dict[str, Any]]:
    """The first tool record of each id (shared by the checks of one run: do not modify)."""
    return shared(ev, "tool_records", _index_records)


def _index_records(ev: Evidence) -> dict[str, dict[str, Any]]:
    tools = ev.r.get("tool_calls")
    out: dict[str, dict[str, Any]] = {}
    for t in tools if isinstance(tools, list) else []:
        if isinstance(t, dict) and isinstance(t.get("tool_call_id"), str):
            out.setdefault(t["tool_call_id"], t)
    return out


@check(
    "tools.witness_ids",
    kind=Kind.BEHAVIORAL,
    evidence=("E5",),
    location="$.tool_calls[*].tool_call_id",
    needs=("rollout", "witness"),
    depends_on=("tools.record",),
    scope=("tools", "tool_ids"),
)
def witness_ids(ev: Evidence) -> list[str]:
    """Each witnessed tool call id appears exactly once in the rollout's tool records, and no others do.

    Not applicable where steps reach the harness as text (scope `tool_ids`, Terminus 2): no call id is sent.
    """
    tools = ev.r.get("tool_calls")
    if isinstance(tools, list) and set(map(type, tools)) <= {dict}:
        ids = [t.get("tool_call_id") for t in tools]
        try:
            distinct = set(ids)
        except TypeError:  # an id that is an object: the counting below names what it can
            distinct = None
        if (
            distinct is not None
            and len(distinct) == len(ids)
            and distinct == {c["tool_call_id"] for c in ev.w.tool_calls()}
        ):
            return []  # each witnessed id recorded once, and no other: decided without counting
    recorded = (
        Counter(t.get("tool_call_id") for t in tools if isinstance(t, dict)) if isinstance(tools, list) else Counter()
    )
    witnessed = Counter(c["tool_call_id"] for c in ev.w.tool_calls())
    reasons = []
    # Only the ids in error are sorted (for a stable report): 100,000 honest ids need no order.
    for cid in sorted(cid for cid in witnessed if recorded.get(cid, 0) != 1):
        reasons.append(f"{cid}: witnessed once, recorded {recorded.get(cid, 0)} times")
    # A call whose arguments arrived cut off was never issued, but the record may show it (it should):
    # tools.args_not_run judges how.
    malformed = {c["tool_call_id"] for c in ev.w.malformed_calls()}
    reasons += [
        f"{cid}: recorded but never issued by the provider"
        for cid in sorted(recorded.keys() - witnessed.keys() - malformed, key=str)
    ]
    return reasons


def _paired(ev: Evidence) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
    """The witnessed tool calls and, aligned with them, the record of each id; None when an id has none (the full
    readings below then fail as they always did). Shared by the checks of one run: do not modify."""
    return shared(ev, "tool_pairs", _pair)


def _pair(ev: Evidence) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
    calls = ev.w.tool_calls()
    tools = ev.r.get("tool_calls")
    if isinstance(tools, list) and decided(lambda: _aligned(calls, tools)):
        return calls, tools  # each call's record is the one at its position: no index of 100,000 ids to build
    records = _records(ev)
    try:
        return calls, [records[c["tool_call_id"]] for c in calls]
    except KeyError:
        return None


def _aligned(calls: list[dict[str, Any]], tools: list[Any]) -> bool:
    """Whether the records are objects with the witnessed calls' ids, in their order, each id a string used once:
    then the first record of each call's id is the record at the call's position."""
    ids = column(tools, "tool_call_id")
    return set(map(type, ids)) <= {str} and len(set(ids)) == len(ids) and ids == column(calls, "tool_call_id")


def _decided(ev: Evidence, fast: Callable[[list[dict[str, Any]], list[dict[str, Any]]], bool]) -> bool:
    """`decided` for a look at all (witnessed call, record) pairs at once; never when an id has no record."""
    paired = _paired(ev)
    return paired is not None and decided(lambda: fast(*paired))


def _looked_up(ev: Evidence) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    records = _records(ev)
    for call in ev.w.tool_calls():
        # A final-submit call is skipped before its record is looked up: it may have none.
        yield call, {} if call.get("final_submit") else records[call["tool_call_id"]]


@check(
    "tools.witness_request",
    kind=Kind.BEHAVIORAL,
    evidence=("E5",),
    location="$.tool_calls[*].arguments",
    needs=("rollout", "witness"),
    depends_on=("tools.witness_ids",),
    scope=("tools", "tool_ids"),
)
def witness_request(ev: Evidence) -> list[str]:
    """Each tool record has the name and arguments the provider sent in the call (joined by id: not applicable
    without tool ids)."""

    def all_as_sent(calls: list[dict[str, Any]], recs: list[dict[str, Any]]) -> bool:
        args = [t.get("arguments") for t in recs]
        # A recorded string would be read as JSON before comparing: only objects are compared as they are.
        return (
            str not in set(map(type, args))
            and [t.get("tool_name") for t in recs] == [c["name"] for c in calls]
            and args == [c["arguments"] for c in calls]
        )

    if _decided(ev, all_as_sent):
        return []
    records = _records(ev)
    reasons = []
    for call in ev.w.tool_calls():
        t = records[call["tool_call_id"]]
        if t.get("tool_name") != call["name"]:
            reasons.append(f"{call['tool_call_id']}: tool_name {t.get('tool_name')!r}, sent {call['name']!r}")
        if parsed_arguments(t.get("arguments")) != call["arguments"]:
            reasons.append(f"{call['tool_call_id']}: arguments {t.get('arguments')!r}, sent {call['arguments']!r}")
    return reasons


@check(
    "tools.witness_status",
    kind=Kind.BEHAVIORAL,
    evidence=("E5",),
    location="$.tool_calls[*].status",
    needs=("rollout", "witness"),
    depends_on=("tools.witness_ids",),
    scope=("tools", "tool_ids"),
)
def witness_status(ev: Evidence) -> list[str]:
    """Each tool record's status (and exit code, if recorded) follows the exit code the command was scripted with.

    Not applicable without tool ids: commands typed into one terminal (Terminus 2) have no per-command status.
    """

    def all_as_scripted(calls: list[dict[str, Any]], recs: list[dict[str, Any]]) -> bool:
        codes = [c["exit_code"] for c in calls]
        statuses = ["failed" if code != 0 else "succeeded" for code in codes]
        return [t.get("status") for t in recs] == statuses and [t.get("exit_code") for t in recs] == codes

    if _decided(ev, all_as_scripted):
        return []
    records = _records(ev)
    reasons = []
    for call in ev.w.tool_calls():
        t = records[call["tool_call_id"]]
        want = "failed" if call["exit_code"] != 0 else "succeeded"
        if t.get("status") != want:
            reasons.append(
                f"{call['tool_call_id']}: status {t.get('status')!r}, the command exited {call['exit_code']}"
            )
        if t.get("exit_code") is not None and t.get("exit_code") != call["exit_code"]:
            reasons.append(
                f"{call['tool_call_id']}: exit_code {t.get('exit_code')}, the command exited {call['exit_code']}"
            )
    return reasons


@check(
    "tools.witness_output",
    kind=Kind.BEHAVIORAL,
    evidence=("E5",),
    location="$.tool_calls[*].output",
    needs=("rollout", "witness"),
    depends_on=("tools.witness_ids", "witness.results_seen"),
    scope=("tools", "tool_ids"),
)
def witness_output(ev: Evidence) -> list[str]:
    """Each tool record's output is exactly what the model saw as the call's result (joined by id: not applicable
    without tool ids; the shared screen a text-driven harness sees is witnessed as each call's result)."""
    paired = _paired(ev)
    # Each call with its record: the pairs made once for the tool checks, or (an id with no record) looked up, which
    # fails on the first such id as it always did.
    with_records = zip(*paired, strict=True) if paired is not None else _looked_up(ev)
    results_seen = ev.w.results_seen
    reasons = []
    for call, t in with_records:
        if call.get("final_submit"):
            # The model never saw a result of the final-submit call (the harness ended on it): nothing to compare.
            continue
        results = results_seen(call["tool_call_id"])
        if len(results) == 1 and t.get("output") == results[0]["output"] and results[0]["output"] is not None:
            continue  # the common case: seen once, as recorded
        if any(withheld(s, "output") for s in results):
            reasons.append(f"{call['tool_call_id']}: the result the model saw cannot be compared: {WITHHELD}")
            results = [s for s in results if not withheld(s, "output")]
        for seen in {s["output"] for s in results}:
            if t.get("output") != seen:
                reasons.append(f"{call['tool_call_id']}: output {t.get('output')!r}, the model saw {seen!r}")
    return reasons
