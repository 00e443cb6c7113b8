"""Semantic checks over the rollout alone: its records hang together (history, ownership, steps, tool joins)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from orchestrator.checks.evidence import Evidence
from orchestrator.checks.join import call_column, decided, model_calls, shared
from orchestrator.checks.model import Kind, check
from orchestrator.evidence.jsonread import JsonFault, loads
from orchestrator.evidence.text import bounded

__all__: list[str] = []


def _dicts(ev: Evidence, key: str) -> list[dict[str, Any]]:
    """The entries of one collection that are objects (shared by the checks of one run: do not modify)."""
    return shared(ev, f"dicts:{key}", lambda e: _objects(e.r.get(key)))


def _objects(value: Any) -> list[dict[str, Any]]:
    return [x for x in value if isinstance(x, dict)] if isinstance(value, list) else []


@check(
    "history.rebuildable",
    kind=Kind.SEMANTIC,
    evidence=("E4",),
    location="$.invocations[*].conversation",
    needs=("rollout",),
    depends_on=("invocations.identity",),
)
def history_rebuildable(ev: Evidence) -> list[str]:
    """Each invocation's model-visible history can be replayed: a task, and every tool call answered in order.

    Lie caught besides a history with holes: a recorded request that continues a response by
    `previous_response_id` (the provider holds the history) when no call recorded before it returned that
    response, so the history the request was sent from is nowhere in the rollout.
    """
    reasons = _unrecorded_predecessors(ev)
    turns_of = _assistant_turns(ev)
    for inv in _dicts(ev, "invocations"):
        iid = inv["invocation_id"]
        # One pass over the history (it may hold 200,000 messages): the task, the answers, the assistant turns.
        has_task = False
        turns: list[dict[str, Any]] = []
        found: list[str] = []
        pending: set[str] = set()
        answered: set[str] = set()
        for n, m in enumerate(inv["conversation"]):
            role = m.get("role")
            if role == "assistant":
                turns.append(m)
                for tc in m.get("tool_calls") or []:
                    pending.add(tc.get("tool_call_id"))
            elif role == "tool":
                cid = m.get("tool_call_id")
                if cid not in pending:
                    found.append(f"invocation {iid}: conversation[{n}] answers {cid!r}, which no earlier turn called")
                elif cid in answered:
                    found.append(f"invocation {iid}: conversation[{n}] answers {cid!r} a second time")
                answered.add(cid)
            elif role == "user":
                has_task = True
        turns_of[id(inv)] = turns
        if not has_task:
            reasons.append(f"invocation {iid}: the conversation has no user message (the task)")
        reasons += found
        # A call left unanswered is only a gap in the history if the model was asked again after it.
        for m in turns[:-1]:
            for tc in m.get("tool_calls") or []:
                if tc.get("tool_call_id") not in answered:
                    reasons.append(
                        f"invocation {iid}: tool call {tc.get('tool_call_id')!r} has no result in the history"
                    )
    return reasons


def _previous_response(request: Any) -> Any:
    """The previous_response_id a recorded request names (a request recorded as JSON text is read), else None."""
    if isinstance(request, str) and "previous_response_id" in request:
        try:
            request = loads(request)
        except JsonFault:
            return None  # not JSON: nothing it continues can be read (attempts.exchange holds it to the wire)
    return request.get("previous_response_id") if isinstance(request, dict) else None


def _unrecorded_predecessors(ev: Evidence) -> list[str]:
    requests = call_column(ev, "request")
    if requests.count(None) == len(requests):
        return []  # no call records its request (most harnesses): the history is the conversation alone
    reasons = []
    returned: set[Any] = set()
    for c, request in zip(model_calls(ev), requests, strict=True):
        previous = _previous_response(request)
        if previous is not None and (not isinstance(previous, str) or previous not in returned):
            reasons.append(
                f"{c.get('model_call_id')}: its request continues response {previous!r} "
                "(previous_response_id), which no call recorded before it returned: the history it was sent "
                "from is not in the rollout"
            )
        rid = c.get("response_id")
        if isinstance(rid, str):
            returned.add(rid)
    return reasons


@check(
    "invocations.parent",
    kind=Kind.SEMANTIC,
    evidence=("E8",),
    location="$.invocations[*].parent_invocation_id",
    needs=("rollout",),
    depends_on=("invocations.identity",),
)
def invocations_parent(ev: Evidence) -> list[str]:
    """Parent links resolve to recorded invocations, form no cycle, and lead to exactly one root."""
    invs = {inv["invocation_id"]: inv.get("parent_invocation_id") for inv in _dicts(ev, "invocations")}
    reasons = [
        f"invocation {i}: parent {p!r} is not recorded" for i, p in invs.items() if p is not None and p not in invs
    ]
    roots = [i for i, p in invs.items() if p is None]
    if len(roots) != 1:
        reasons.append(f"expected exactly one root invocation, found {len(roots)}: {roots}")
    for start in invs:
        seen, cur = set(), start
        while cur is not None and cur in invs:
            if cur in seen:
                reasons.append(f"invocation {start}: its parent chain has a cycle")
                break
            seen.add(cur)
            cur = invs[cur]
    return reasons


@check(
    "ownership.call_owner",
    kind=Kind.SEMANTIC,
    evidence=("E8",),
    location="$.model_calls[*].invocation_id",
    needs=("rollout",),
    depends_on=("calls.identity", "invocations.identity"),
)
def ownership_call_owner(ev: Evidence) -> list[str]:
    """Every model call, failed attempts included, is owned by exactly one invocation, and both sides agree."""
    calls = _calls_by_id(ev)
    invs = _dicts(ev, "invocations")

    def one_owner_each() -> bool:
        # Every call referenced by exactly one invocation, every reference a recorded call, and owners agreeing.
        refs = [ref for inv in invs for ref in inv["model_call_refs"]]
        distinct = set(refs)
        if len(distinct) != len(refs) or distinct != calls.keys():
            return False
        return all(
            {calls[ref].get("invocation_id") for ref in inv["model_call_refs"]} <= {inv["invocation_id"]}
            for inv in invs
        )

    if decided(one_owner_each):
        return []
    owner: dict[str, str] = {}  # each call's first owner; a call referenced again also has all its owners listed
    owners_of: dict[str, list[str]] = {}
    reasons = []
    for inv in _dicts(ev, "invocations"):
        iid = inv["invocation_id"]
        for ref in inv["model_call_refs"]:
            if ref in owner:
                owners_of.setdefault(ref, [owner[ref]]).append(iid)
            else:
                owner[ref] = iid
            if ref not in calls:
                reasons.append(f"invocation {iid} references unknown call {ref!r}")
    for cid, c in calls.items():
        owners = owners_of.get(cid) or ([owner[cid]] if cid in owner else [])
        if len(owners) != 1:
            reasons.append(f"call {cid}: referenced by {len(owners)} invocations {owners}, expected exactly one")
        elif c.get("invocation_id") != owners[0]:
            reasons.append(f"call {cid}: invocation_id {c.get('invocation_id')!r} but owned by {owners[0]!r}")
    return reasons


def _calls_by_id(ev: Evidence) -> dict[Any, dict[str, Any]]:
    """Recorded calls by model_call_id, the last of a repeated id winning (read only after calls.identity)."""
    return shared(ev, "calls_by_id", lambda e: {c["model_call_id"]: c for c in _dicts(e, "model_calls")})


@check(
    "steps.call_refs",
    kind=Kind.SEMANTIC,
    evidence=("E3", "E9"),
    location="$.steps[*].model_call_refs",
    needs=("rollout",),
    depends_on=("steps.numbering", "calls.identity"),
    scope=("steps",),
)
def steps_call_refs(ev: Evidence) -> list[str]:
    """Each step references at least one recorded call, and each call it references belongs to its invocation."""
    calls = _calls_by_id(ev)
    steps = _dicts(ev, "steps")

    def all_known_and_own() -> bool:
        for st in steps:
            st["step_no"]  # read as the full reading does: a step without one is its error, not a pass
            iid, refs = st["invocation_id"], st["model_call_refs"]
            if not refs:
                return False
            for ref in refs:
                if calls[ref].get("invocation_id") != iid:
                    return False
        return True

    if decided(all_known_and_own):
        return []
    reasons = []
    for st in steps:
        where = f"step {st['step_no']} of {st['invocation_id']!r}"
        if not st["model_call_refs"]:
            reasons.append(f"{where}: references no model call")
        for ref in st["model_call_refs"]:
            if ref not in calls:
                reasons.append(f"{where}: references unknown call {ref!r}")
            elif calls[ref].get("invocation_id") != st["invocation_id"]:
                reasons.append(f"{where}: call {ref} belongs to invocation {calls[ref].get('invocation_id')!r}")
    return reasons


@check(
    "steps.attempt_accounting",
    kind=Kind.SEMANTIC,
    evidence=("E9",),
    location="$.steps[*].model_call_refs",
    needs=("rollout",),
    depends_on=("steps.numbering", "calls.identity"),
    scope=("steps",),
)
def steps_attempt_accounting(ev: Evidence) -> list[str]:
    """Every recorded policy call, retries included, belongs to exactly one step; a compaction's calls to none."""

    def each_in_one_step() -> bool:
        if any(comp.get("model_call_refs") for comp in _dicts(ev, "compactions")):
            return False  # calls a compaction made are owned by no step: the full reading sorts them out
        refs = [ref for st in _dicts(ev, "steps") for ref in st["model_call_refs"]]
        distinct = set(refs)
        return len(distinct) == len(refs) and distinct.issuperset(
            [c["model_call_id"] for c in _dicts(ev, "model_calls")]
        )

    if decided(each_in_one_step):
        return []
    # Only string refs can name a call; anything else in a ref list (an object, an array) is not hashable either.
    counts = Counter(ref for st in _dicts(ev, "steps") for ref in _string_refs(st))
    helpers = {ref for comp in _dicts(ev, "compactions") for ref in _string_refs(comp)}
    return [
        f"call {c['model_call_id']}: in {counts.get(c['model_call_id'], 0)} steps, expected exactly {want}"
        for c in _dicts(ev, "model_calls")
        if counts.get(c["model_call_id"], 0) != (want := 0 if c["model_call_id"] in helpers else 1)
    ]


def _string_refs(record: dict[str, Any]) -> list[str]:
    refs = record.get("model_call_refs")
    return [r for r in refs if isinstance(r, str)] if isinstance(refs, list) else []


@check(
    "tools.request_join",
    kind=Kind.SEMANTIC,
    evidence=("E5",),
    location="$.invocations[*].conversation[*].tool_calls",
    needs=("rollout",),
    depends_on=("tools.record", "invocations.identity"),
    scope=("tools", "tool_ids"),
)
def tools_request_join(ev: Evidence) -> list[str]:
    """Each tool record joins to exactly one requesting tool call, with the same name, in its invocation's history
    (a record whose invocation_id is null: in the history of the one invocation that requested it).

    Not applicable without tool ids (scope `tool_ids`): a text-driven harness's history holds reply text, and the
    commands it parsed from it have ids the harness minted itself.
    """
    if decided(lambda: _each_requested_once(ev)):
        return []
    # Indexed once: rollouts with 100,000 calls must not cost a scan of the history per tool record. The first
    # request of each (invocation, id), and how often it was requested where that is more than once.
    first: dict[tuple[Any, Any], dict[str, Any]] = {}
    repeated: dict[tuple[Any, Any], int] = {}
    for inv in _dicts(ev, "invocations"):
        iid = inv["invocation_id"]
        for m in inv["conversation"]:
            if m.get("role") == "assistant":
                for tc in m.get("tool_calls") or []:
                    key = (iid, tc.get("tool_call_id"))
                    if key in first:
                        repeated[key] = repeated.get(key, 1) + 1
                    else:
                        first[key] = tc
    known = {inv["invocation_id"] for inv in _dicts(ev, "invocations")}
    # The invocations whose history requested each id, for records that leave theirs null (indexed once).
    requesters: dict[Any, list[Any]] = {}
    for inv, requested in first:
        requesters.setdefault(requested, []).append(inv)
    reasons = []
    for t in _dicts(ev, "tool_calls"):
        cid, iid = t["tool_call_id"], t.get("invocation_id")
        if iid is None:
            # The schema lets a record leave its invocation unknown: it joins the one invocation that requested it.
            requesting = requesters.get(cid, [])
            if len(requesting) != 1:
                n = len(requesting)
                reasons.append(f"tool {cid}: invocation_id null, and {n} invocations requested it, not one")
                continue
            iid = requesting[0]
        if iid not in known:
            reasons.append(f"tool {cid}: invocation_id {iid!r} is not a recorded invocation")
            continue
        request = first.get((iid, cid))
        times = 0 if request is None else repeated.get((iid, cid), 1)
        if times != 1:
            reasons.append(f"tool {cid}: requested {times} times in its invocation's history, expected once")
        elif request is not None and request.get("tool_name") != t["tool_name"]:
            asked = request.get("tool_name")
            reasons.append(f"tool {cid}: recorded as {t['tool_name']!r} but requested as {asked!r}")
    return reasons


def _assistant_turns(ev: Evidence) -> dict[int, list[dict[str, Any]]]:
    """Each invocation's assistant messages, in order, by the invocation's id(): history.rebuildable's pass over a
    history finds them, so tools.request_join need not pass over the other messages again (shared: do not modify)."""
    return shared(ev, "assistant_turns", lambda e: {})


def _each_requested_once(ev: Evidence) -> bool:
    """Whether tools.request_join finds nothing: every id requested once in its invocation's history, and every tool
    record joining its request by invocation and id, under the same name. Indexed per invocation, by id alone."""
    requests: dict[Any, dict[Any, dict[str, Any]]] = {}
    turns_of = _assistant_turns(ev)
    for inv in _dicts(ev, "invocations"):
        by_id = requests.setdefault(inv["invocation_id"], {})
        turns = turns_of.get(id(inv))
        if turns is None:
            turns = [m for m in inv["conversation"] if m.get("role") == "assistant"]
        for m in turns:
            for tc in m.get("tool_calls") or []:
                cid = tc.get("tool_call_id")
                if cid in by_id:
                    return False  # requested again (in this or a same-named invocation)
                by_id[cid] = tc
    for t in _dicts(ev, "tool_calls"):
        if t.get("invocation_id") is None:
            return False  # the invocation the record leaves unknown is looked for by the full reading
        of_inv = requests.get(t.get("invocation_id"))
        request = None if of_inv is None else of_inv.get(t["tool_call_id"])
        if request is None or request.get("tool_name") != t["tool_name"]:
            return False
    return True


@check(
    "gaps.none_voiding",
    kind=Kind.SEMANTIC,
    evidence=("E1", "E2", "E3", "E4", "E5", "E6", "E7", "E8", "E9"),
    location="$.gaps",
    needs=("rollout",),
    depends_on=("rollout.format",),
)
def gaps_none_voiding(ev: Evidence) -> list[str]:
    """No gap voids an evidence label: what the harness did not report is named, and named gaps count against it."""
    # The labels close each reason, each once and in order, after a detail of bounded length: the reports read them
    # back from there (report/findings.py), and a reason past the runner's bound would lose them to its cut.
    return [
        f"{bounded(str(g.get('code')), 200)}: {bounded(str(g.get('detail')), 1000)} (voids {_labels(g['labels'])})"
        for g in _dicts(ev, "gaps")
        if g.get("labels")
    ]


def _labels(labels: list[str]) -> str:
    # rollout.format passed (this check depends on it): every label is E1..E10.
    return ", ".join(sorted(set(labels), key=lambda label: int(label[1:])))
