"""Schema checks over the rollout alone: each judges its own fields, so one malformed field fails one check."""

from __future__ import annotations

from collections import Counter
from typing import Any

from orchestrator.checks import looks
from orchestrator.checks.evidence import Evidence, scope_of
from orchestrator.checks.join import call_column, shared
from orchestrator.checks.model import Kind, check
from orchestrator.checks.times import TimeCache, parse_time
from orchestrator.evidence import envelope_faults, fragment_batch_precheck, fragment_faults, holds_tuple

__all__: list[str] = []

FMT = "probe-rollout/v1"
_ALL = ("E1", "E2", "E3", "E4", "E5", "E6", "E7", "E8", "E9")
# Top-level values that other checks judge entry by entry (so one malformed call fails one check; compaction
# records are compaction.recorded's), and the keys whose presence and type rollout.format names in its own words;
# the schema judges the rest of the top level.
_JUDGED_ELSEWHERE = frozenset({"model_calls", "invocations", "steps", "tool_calls", "outcome", "compactions"})
_TYPED_HERE = frozenset({"schema", "model_calls", "invocations", "steps", "tool_calls", "gaps", "harness", "outcome"})


def _items(ev: Evidence, key: str) -> list[Any]:
    value = ev.r.get(key)
    return value if isinstance(value, list) else []


def _json_only(ev: Evidence) -> bool:
    # A rollout built in Python is looked through for a tuple once, rather than in each of the 300,000 fragments
    # judged below; one read from JSON text holds none.
    return ev.rollout_parsed or shared(ev, "rollout.json_only", lambda e: not holds_tuple(e.rollout))


def _frag(ev: Evidence, value: Any, pointer: str, at: str) -> list[str]:
    return [str(f) for f in fragment_faults(value, FMT, pointer, at, parsed=_json_only(ev))]


def _all_valid(ev: Evidence, values: list[Any], pointer: str) -> bool:
    """Whether every value is valid against the fragment, judged in one call: True lets a check skip its per-entry
    faults (each would be empty); False says nothing, and the entries are judged one by one as before.

    Only the values judged are looked through for a tuple (the one thing the fast judge reads otherwise), not the
    whole rollout: the model calls' other fields are no part of these arrays."""
    json_only = ev.rollout_parsed or not holds_tuple(values)
    return json_only and fragment_batch_precheck(FMT, pointer)(values)


def _all_dicts(values: list[Any]) -> bool:
    return set(map(type, values)) <= {dict}


def _distinct(values: list[Any]) -> set[Any] | None:
    """The distinct values, or None when one is not hashable (an object or array where a string belongs)."""
    try:
        return set(values)
    except TypeError:
        return None


def _repeated(field: str, ids: list[Any], verb: str) -> list[str]:
    """An id given more than once, counted among the non-blank strings: an object or array where an id belongs is
    named by the field's own fault, and cannot be counted (it is not hashable)."""
    counts = Counter(v for v in ids if isinstance(v, str) and v)
    return [f"{field} {v!r} {verb} {n} times" for v, n in counts.items() if n > 1]


def _unique_nonblank(ids: list[Any]) -> bool:
    """Whether every id is a non-blank string used once: the honest case, decided without a loop in Python."""
    distinct = set(ids) if set(map(type, ids)) <= {str} else set()
    return len(distinct) == len(ids) and "" not in distinct


@check("rollout.format", kind=Kind.SCHEMA, evidence=_ALL, location="$", needs=("rollout",))
def rollout_format(ev: Evidence) -> list[str]:
    """The rollout is a probe-rollout/v1 object with every top-level collection present and of the right type.

    Lie caught besides a missing collection: a rollout without the fields the schema requires of its top level
    (`task_id`, `rollout_id`, the harness's name and version), with keys the schema does not allow there, or with
    malformed gaps or provenance. Each other schema check judges only its own part of the
    rollout (compaction records are compaction.recorded's), so this check judges the rest of the top level
    against the schema itself: before, the schema's top-level `required` list was read by no check at all.
    """
    reasons = []
    if ev.r.get("schema") != FMT:
        reasons.append(f"$.schema: expected {FMT!r}, got {ev.r.get('schema')!r}")
    for key in ("model_calls", "invocations", "steps", "tool_calls", "gaps"):
        if not isinstance(ev.r.get(key), list):
            reasons.append(f"$.{key}: missing or not an array")
    for key in ("harness", "outcome"):
        if not isinstance(ev.r.get(key), dict):
            reasons.append(f"$.{key}: missing or not an object")
    found = envelope_faults(ev.r, FMT, _JUDGED_ELSEWHERE, _TYPED_HERE, parsed=ev.rollout_parsed)
    return reasons + [str(f) for f in found]


@check(
    "calls.present",
    kind=Kind.SCHEMA,
    evidence=("E1", "E2", "E7", "E8", "E9"),
    location="$.model_calls",
    needs=("rollout",),
    depends_on=("rollout.format",),
)
def calls_present(ev: Evidence) -> list[str]:
    """At least one model call is recorded, each an object."""
    calls = _items(ev, "model_calls")
    if not calls:
        return ["$.model_calls is empty: no model call recorded"]
    return [f"$.model_calls[{i}]: not an object" for i, c in enumerate(calls) if not isinstance(c, dict)]


@check(
    "calls.identity",
    kind=Kind.SCHEMA,
    evidence=("E1",),
    location="$.model_calls[*].model_call_id",
    needs=("rollout",),
    depends_on=("calls.present",),
)
def calls_identity(ev: Evidence) -> list[str]:
    """Every model call has a non-blank model_call_id, unique within the rollout."""
    ids = [c.get("model_call_id") for c in _items(ev, "model_calls")]
    if _unique_nonblank(ids):
        return []
    reasons = [
        f"$.model_calls[{i}].model_call_id: missing, blank or not a string"
        for i, v in enumerate(ids)
        if not (isinstance(v, str) and v)
    ]
    return reasons + _repeated("model_call_id", ids, "used")


@check(
    "calls.protocol",
    kind=Kind.SCHEMA,
    evidence=("E1",),
    location="$.model_calls[*].protocol",
    needs=("rollout",),
    depends_on=("calls.present",),
)
def calls_protocol(ev: Evidence) -> list[str]:
    """Every model call names its provider protocol (chat, responses, messages or gemini)."""
    calls = _items(ev, "model_calls")
    names = _distinct([c.get("protocol") for c in calls]) if _all_dicts(calls) else None
    pointer = "/$defs/model_call/properties/protocol"
    if names is not None and all(type(v) is str and not fragment_faults(v, FMT, pointer, "$") for v in names):
        return []  # every call names one of a few valid protocols (a string holds no tuple: no look for one)
    reasons: list[str] = []
    valid: set[str] = set()  # a protocol name is judged once: 100,000 calls name the same one or two
    for i, c in enumerate(calls):
        value = c.get("protocol")
        if type(value) is str and value in valid:
            continue
        found = _frag(ev, value, "/$defs/model_call/properties/protocol", f"$.model_calls[{i}].protocol")
        if not found and type(value) is str:
            valid.add(value)
        reasons += found
    return reasons


@check(
    "calls.timing",
    kind=Kind.SEMANTIC,
    evidence=("E1",),
    location="$.model_calls[*].started_at",
    needs=("rollout",),
    depends_on=("calls.present",),
)
def calls_timing(ev: Evidence) -> list[str]:
    """Every model call has start and completion times, in order, and calls are recorded in start order."""
    times = TimeCache()
    if looks.times_ordered(ev, _items(ev, "model_calls"), times.parse):
        return []
    reasons = []
    previous = None
    for i, c in enumerate(_items(ev, "model_calls")):
        start, end = times.parse(c.get("started_at")), times.parse(c.get("completed_at"))
        if start is None or end is None:
            reasons.append(f"$.model_calls[{i}]: started_at/completed_at missing or not ISO-8601")
            continue
        if end < start:
            reasons.append(f"$.model_calls[{i}]: completed_at {c['completed_at']} before started_at {c['started_at']}")
        if previous is not None and start < previous:
            reasons.append(f"$.model_calls[{i}]: starts before the call recorded before it")
        previous = start
    return reasons


@check(
    "calls.outcome",
    kind=Kind.SCHEMA,
    evidence=("E1",),
    location="$.model_calls[*].status_code",
    needs=("rollout",),
    depends_on=("calls.present",),
)
def calls_outcome(ev: Evidence) -> list[str]:
    """Each call is either a 2xx with a response id and finish reason, or an error with a status or category."""
    if looks.outcomes_ok(ev, _items(ev, "model_calls")):
        return []
    reasons = []
    for i, c in enumerate(_items(ev, "model_calls")):
        status, category = c.get("status_code"), c.get("error_category")
        rid = c.get("response_id")
        if rid is not None and not isinstance(rid, str):
            # Named here, so no later check has to read an id it cannot compare.
            reasons.append(
                f"$.model_calls[{i}].response_id: a {type(rid).__name__} is not a response id (string or null)"
            )
            continue
        if status is not None and not (isinstance(status, int) and 100 <= status <= 599):
            reasons.append(f"$.model_calls[{i}].status_code: {status!r} is not an HTTP status or null")
            continue
        if isinstance(category, str) and category:
            continue
        if not (isinstance(status, int) and 200 <= status < 300):
            reasons.append(f"$.model_calls[{i}]: neither a 2xx status nor an error_category (status {status!r})")
            continue
        if rid and isinstance(c.get("finish_reason"), str) and c.get("finish_reason"):
            continue  # the common case: a success with its id and finish reason (the path is formatted only if not)
        for key in ("response_id", "finish_reason"):
            if not (isinstance(c.get(key), str) and c.get(key)):
                reasons.append(f"$.model_calls[{i}].{key}: a successful call needs a non-blank {key}")
    return reasons


@check(
    "tokens.fields",
    kind=Kind.SCHEMA,
    evidence=("E2",),
    location="$.model_calls[*].token_stats",
    needs=("rollout",),
    depends_on=("calls.present",),
)
def tokens_fields(ev: Evidence) -> list[str]:
    """Every call has token_stats with prompt, completion, reasoning, total, cached: each a count >= 0 or null."""
    calls = _items(ev, "model_calls")
    pointer = "/$defs/model_call/properties/token_stats"
    # All objects: they are the shared model_calls, whose token_stats column tokens.match reads too.
    if _all_dicts(calls) and _all_valid(ev, call_column(ev, "token_stats"), pointer):
        return []
    reasons: list[str] = []
    for i, c in enumerate(calls):
        at = f"$.model_calls[{i}].token_stats"
        reasons += _frag(ev, c.get("token_stats"), pointer, at)
    return reasons


@check(
    "invocations.identity",
    kind=Kind.SCHEMA,
    evidence=("E8",),
    location="$.invocations[*].invocation_id",
    needs=("rollout",),
    depends_on=("rollout.format",),
)
def invocations_identity(ev: Evidence) -> list[str]:
    """At least one invocation; each has a unique non-blank id, a parent (or null), call refs and a conversation."""
    invs = _items(ev, "invocations")
    if not invs:
        return ["$.invocations is empty: no invocation owns the calls"]
    reasons: list[str] = []
    if not _all_valid(ev, invs, "/$defs/invocation"):
        for i, inv in enumerate(invs):
            reasons += _frag(ev, inv, "/$defs/invocation", f"$.invocations[{i}]")
    return reasons + _repeated(
        "invocation_id", [inv.get("invocation_id") for inv in invs if isinstance(inv, dict)], "used"
    )


@check(
    "steps.numbering",
    kind=Kind.SCHEMA,
    evidence=("E3",),
    location="$.steps[*].step_no",
    needs=("rollout",),
    depends_on=("rollout.format",),
    scope=("steps",),
)
def steps_numbering(ev: Evidence) -> list[str]:
    """Steps are recorded, numbered 1, 2, 3... without gaps within each invocation, and timestamped."""
    steps = _items(ev, "steps")
    if not steps:
        return ["$.steps is empty: no agent step recorded"]
    reasons: list[str] = []
    by_inv: dict[Any, list[Any]] = {}
    valid = _all_valid(ev, steps, "/$defs/step")  # then every step is an object and has no faults to name
    if valid and _one_invocation_in_order(steps):
        return []
    times = TimeCache()
    for i, st in enumerate(steps):
        if not valid:
            reasons += _frag(ev, st, "/$defs/step", f"$.steps[{i}]")
            if not isinstance(st, dict):
                continue
        if times.parse(st.get("timestamp")) is None:
            reasons.append(f"$.steps[{i}].timestamp: missing or not ISO-8601")
        inv = st.get("invocation_id")
        if not isinstance(inv, dict | list):  # an object or array there is named by the step's own fault above
            by_inv.setdefault(inv, []).append(st.get("step_no"))
    for inv, numbers in by_inv.items():
        if numbers != list(range(1, len(numbers) + 1)):
            reasons.append(f"steps of invocation {inv!r} are numbered {numbers}, expected 1..{len(numbers)} in order")
    return reasons


@check(
    "tools.record",
    kind=Kind.SCHEMA,
    evidence=("E5",),
    location="$.tool_calls[*]",
    needs=("rollout",),
    depends_on=("rollout.format",),
    scope=("tools",),
)
def tools_record(ev: Evidence) -> list[str]:
    """Tool records exist; each has a unique id, a name, a status (succeeded/failed) and the output it returned.

    Where steps reach the harness as text (scope `tool_ids` false, Terminus 2), commands typed into one terminal
    have no status of their own, so a null status is not asked for; the id, name and output still are.
    """
    per_call_status = bool(scope_of(ev.scenario).get("tool_ids", True)) if "scope" in ev.scenario else True
    tools = _items(ev, "tool_calls")
    if not tools:
        return ["$.tool_calls is empty: no tool execution recorded"]
    reasons: list[str] = []
    if _all_valid(ev, tools, "/$defs/tool_call") and _records_complete(tools, per_call_status):
        ids = [t["tool_call_id"] for t in tools]
        if len(set(ids)) == len(ids):
            return []
    for i, t in enumerate(tools):
        at = f"$.tool_calls[{i}]"
        reasons += _frag(ev, t, "/$defs/tool_call", at)
        if not isinstance(t, dict):
            continue
        if not (isinstance(t.get("tool_call_id"), str) and t["tool_call_id"]):
            reasons.append(f"{at}.tool_call_id: blank")
        if not (isinstance(t.get("tool_name"), str) and t["tool_name"]):
            reasons.append(f"{at}.tool_name: blank")
        if t.get("status") is None and per_call_status:
            reasons.append(f"{at}.status: not reported")
        if t.get("output") is None:
            reasons.append(f"{at}.output: not recorded")
    return reasons + _repeated(
        "tool_call_id", [t.get("tool_call_id") for t in tools if isinstance(t, dict)], "recorded"
    )


def _one_invocation_in_order(steps: list[dict[str, Any]]) -> bool:
    """Of schema-valid steps: whether all belong to one invocation, are numbered 1, 2, 3... in order and carry
    times that parse (each distinct time parsed once): steps.numbering's honest case, without a pass per step."""
    if len({st["invocation_id"] for st in steps}) != 1:
        return False
    if any(parse_time(stamp) is None for stamp in {st["timestamp"] for st in steps}):
        return False
    return [st["step_no"] for st in steps] == list(range(1, len(steps) + 1))


def _records_complete(tools: list[dict[str, Any]], per_call_status: bool) -> bool:
    """Of schema-valid tool records: whether none lacks an id, a name, an output or (when asked for) a status."""
    names = {t["tool_name"] for t in tools}
    outputs = {type(t["output"]) for t in tools}
    statuses = {t["status"] for t in tools}
    # The schema makes ids non-blank strings, names strings, outputs strings or null.
    return "" not in names and outputs <= {str} and (None not in statuses or not per_call_status)


@check(
    "outcome.fields",
    kind=Kind.SCHEMA,
    evidence=("E6",),
    location="$.outcome",
    needs=("rollout",),
    depends_on=("rollout.format",),
)
def outcome_fields(ev: Evidence) -> list[str]:
    """The outcome says how the run ended: a completed run names its final answer, an error run its failure."""
    out = ev.r.get("outcome")
    # One small value: looked through for a tuple itself (what `_json_only` would answer for it), not the rollout.
    reasons = [str(f) for f in fragment_faults(out, FMT, "/$defs/outcome", "$.outcome", parsed=ev.rollout_parsed)]
    if reasons or not isinstance(out, dict):
        return reasons
    if out["status"] == "completed" and not out.get("final_answer"):
        reasons.append("$.outcome: status completed without a final_answer")
    if out["status"] == "error" and not (out.get("failure_kind") or out.get("failure_reason")):
        reasons.append("$.outcome: status error without failure_kind or failure_reason")
    if out["status"] == "unknown":
        reasons.append("$.outcome.status: unknown: the harness recorded neither a final answer nor an error")
    return reasons
