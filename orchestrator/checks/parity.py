"""Transport parity: the same script played as JSON and as SSE normalizes to the same rollout facts."""

from __future__ import annotations

import json
from typing import Any

from orchestrator.checks.evidence import Evidence, Witness
from orchestrator.checks.join import dicts
from orchestrator.checks.model import Kind, check

__all__ = ["MAX_REASONS", "facts"]

MAX_REASONS = 12
_TOKEN_FIELDS = ("prompt", "completion", "reasoning", "total", "cached")


# A twin's rollout is the harness's, of any shape: a field of the wrong type is a difference, never a crash.
def _field(value: Any, name: str) -> Any:
    return value.get(name) if isinstance(value, dict) else None


def _length(value: Any) -> int | None:
    return len(value) if isinstance(value, list) else None


def _placeholders(w: Witness) -> dict[str, str]:
    """What differs between two plays of one script by design, each named by its place: every reply's response id,
    every tool call's id and token (fresh per play)."""
    names: dict[str, str] = {}
    for n, a in enumerate(w.attempts("model"), start=1):
        if isinstance(a.get("response_id"), str):
            names[a["response_id"]] = f"<reply {n}>"
    for n, c in enumerate(w.of("tool_call"), start=1):
        names[str(c["tool_call_id"])] = f"<call {n}>"
        names[str(c["token"])] = f"<token {n}>"
    return names


def _masked(value: Any, names: dict[str, str]) -> Any:
    text = json.dumps(value, sort_keys=True)
    for raw in sorted(names, key=len, reverse=True):
        text = text.replace(raw, names[raw])
    return json.loads(text)


def facts(rollout: dict[str, Any], witness: Witness) -> dict[str, Any]:
    """The rollout's facts a transport must not change: each call's outcome, finish reason, counts and protocol;
    steps as numbers of attempts; tool records; the histories' roles and contents; the outcome; the gap codes. Ids and
    tokens minted per play are replaced by their place in the play's witness; times and the harness's own ids
    (calls, invocations) are left out."""
    calls = [
        {
            "status_code": c.get("status_code"),
            "failed": c.get("error_category") is not None,
            "error_category": c.get("error_category"),
            "finish_reason": c.get("finish_reason"),
            "protocol": c.get("protocol"),
            "response_id": c.get("response_id"),
            "token_stats": {f: _field(c.get("token_stats"), f) for f in _TOKEN_FIELDS},
        }
        for c in dicts(rollout.get("model_calls"))
    ]
    tools = [
        {k: t.get(k) for k in ("tool_call_id", "tool_name", "arguments", "status", "exit_code", "output", "step_no")}
        for t in dicts(rollout.get("tool_calls"))
    ]
    histories = [
        [
            {k: m.get(k) for k in ("role", "content", "tool_call_id", "origin")}
            | {
                "tool_calls": [
                    {k: tc.get(k) for k in ("tool_call_id", "tool_name")} for tc in dicts(m.get("tool_calls"))
                ]
            }
            for m in dicts(inv.get("conversation"))
        ]
        for inv in dicts(rollout.get("invocations"))
    ]
    raw = rollout.get("outcome")
    outcome: dict[str, Any] = raw if isinstance(raw, dict) else {}
    found = {
        "model_calls": calls,
        "steps": [_length(s.get("model_call_refs")) for s in dicts(rollout.get("steps"))],
        "tool_calls": tools,
        "histories": histories,
        "outcome": {k: outcome.get(k) for k in ("status", "final_answer", "failure_kind")},
        "gaps": sorted({str(g.get("code")) for g in dicts(rollout.get("gaps"))}),
    }
    masked: dict[str, Any] = _masked(found, _placeholders(witness))
    return masked


def _differences(path: str, a: Any, b: Any, out: list[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            _differences(f"{path}.{key}", a.get(key), b.get(key), out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for n, (x, y) in enumerate(zip(a, b, strict=True)):
            _differences(f"{path}[{n}]", x, y, out)
    elif a != b:
        out.append(f"{path}: {_shown(a)} here, {_shown(b)} in the twin")


def _shown(value: Any) -> str:
    if isinstance(value, list):
        return f"{len(value)} entries"
    text = json.dumps(value)
    return text if len(text) <= 80 else text[:77] + "..."


@check(
    "transport.parity",
    kind=Kind.BEHAVIORAL,
    tier="P1",
    evidence=("E1", "E4"),
    location="$",
    needs=("rollout", "witness", "twin_rollout", "twin_witness"),
    scope=("twin",),
    claims=lambda ev: ev.twin_rollout is not None or "twin_rollout" in ev.errors,
)
def transport_parity(ev: Evidence) -> list[str]:
    """Played once as JSON and once as SSE (`run --compare-stream`, for a harness that can be switched between the
    two), the same script normalizes to the same rollout facts: calls, finish reasons and counts, steps, tool records,
    histories, outcome and gaps, with per-play ids and tokens named by their place in each play's witness.

    Lie caught: a self-report whose facts depend on how the bytes arrived (a finish reason, a count or a tool record
    kept only in one mode, a stream's deltas recorded as separate turns) where each play alone may still pass the
    checks that hold it to its own witness. Applies only to an episode that has its twin (`twin/` of its folder).
    """
    assert ev.twin_rollout is not None and ev.twin_witness is not None
    mine = facts(ev.r, ev.w)
    theirs = facts(dict(ev.twin_rollout), ev.twin_witness)
    out: list[str] = []
    _differences("$", mine, theirs, out)
    if len(out) > MAX_REASONS:
        out = [*out[:MAX_REASONS], f"and {len(out) - MAX_REASONS} more differences"]
    return [f"the play over the other transport (twin/) normalizes otherwise: {d}" for d in out]
