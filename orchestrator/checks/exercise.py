"""Checks on the witness alone: was the script really played (tools ran, results returned, answer reached)?"""

from __future__ import annotations

from typing import Any

from orchestrator.checks.evidence import Evidence
from orchestrator.checks.model import Kind, check

__all__: list[str] = []


@check(
    "witness.no_violations",
    kind=Kind.BEHAVIORAL,
    evidence=("E1",),
    location="$[?(@.event=='violation')]",
    needs=("witness",),
)
def no_violations(ev: Evidence) -> list[str]:
    """The harness kept to the script: the provider recorded no violation (unknown route, missing tool, ...)."""
    return [f"{v['code']}: {v['detail']}" for v in ev.w.of("violation")]


@check(
    "witness.tools_executed",
    kind=Kind.BEHAVIORAL,
    evidence=("E5",),
    location="$[?(@.event=='marker')]",
    needs=("witness",),
    scope=("tools",),
)
def tools_executed(ev: Evidence) -> list[str]:
    """Every scripted tool call ran for real: its marker file holds its fresh token (seen by proxy and collector)."""
    scripted = sum(len(s.get("tool_calls", [])) for s in ev.scenario["script"])
    calls = ev.w.tool_calls()
    reasons = []
    if len(calls) < scripted:
        reasons.append(f"the provider issued {len(calls)} of {scripted} scripted tool calls")
    if "markers" in ev.errors and calls:
        reasons.append(f"the collected markers cannot be read: {ev.errors['markers']}")
    markers_seen, collected_files = ev.w.markers, ev.markers  # looked up once, not per call
    for call in calls:
        cid, token = call["tool_call_id"], call["token"]
        seen = markers_seen(cid)
        if len(seen) == 1 and seen[0]["present"] and seen[0]["matches"]:
            pass  # the common case, decided without a generator
        elif not any(m["present"] and m["matches"] for m in seen):
            reasons.append(f"{cid}: the proxy never saw its marker with the token")
        collected = collected_files.get(f"{cid}.txt")
        if collected != token:
            state = "missing" if collected is None else "with other content"
            reasons.append(f"{cid}: collected marker file {state}")
    return reasons


@check(
    "witness.results_seen",
    kind=Kind.BEHAVIORAL,
    evidence=("E4", "E5"),
    location="$[?(@.event=='tool_result_seen')]",
    needs=("witness",),
    scope=("tools", "tool_results"),
)
def results_seen(ev: Evidence) -> list[str]:
    """Every tool call's output went back to the model: a later request carried a result with the token.

    Not applicable where the harness never sends a step's output back (scope `tool_results`, SciCode: it runs the
    blocks, if at all, only after its last request).
    """
    reasons = []
    results_seen = ev.w.results_seen
    for call in ev.w.tool_calls():
        if call.get("final_submit"):
            # The final answer delivered through the shell: the harness ends on it, so nothing carries it back.
            continue
        seen = results_seen(call["tool_call_id"])
        if not seen:
            reasons.append(f"{call['tool_call_id']}: no later request carried its result")
        elif seen[0].get("token_present"):
            continue  # the common case, decided without a generator
        elif not any(s.get("token_present") for s in seen):
            reasons.append(f"{call['tool_call_id']}: its result never contained the token")
    return reasons


@check(
    "witness.final_answer_sent",
    kind=Kind.BEHAVIORAL,
    evidence=("E6",),
    location="$[?(@.event=='attempt')].finish_reason",
    needs=("witness",),
    scope=("final_answer",),
)
def final_answer_sent(ev: Evidence) -> list[str]:
    """The conversation reached the scripted final answer on the wire."""
    if ev.w.final_reply() is None:
        return ["the provider never sent the final answer: the harness stopped before it"]
    return []


# The statuses an `overloaded` fault is played with: Anthropic's 529, OpenAI's 503.
_OVERLOADED_STATUSES = frozenset({529, 503})


def _fault_reason(fault: dict[str, Any], attempt: dict[str, Any] | None, model: list[dict[str, Any]]) -> str | None:
    n, kind = fault["attempt"], fault["kind"]
    if kind == "quota":
        # A window, not an attempt: exercised once some attempt from its start on was refused by it.
        if any(a.get("fault") == "quota" for a in model if (a.get("model_attempt") or 0) >= n):
            return None
        return (
            f"quota of {fault.get('requests')} per {fault.get('window_seconds')} s from model attempt {n}: no "
            "attempt was refused by it (the harness never made requests fast enough to reach it)"
        )
    if attempt is None:
        return f"fault {kind} scripted for model attempt {n}: the harness never made that attempt"
    if attempt.get("fault") != kind:
        return f"fault {kind} scripted for model attempt {n}: the wire shows {attempt.get('fault') or 'no fault'}"
    if kind == "http_error" and attempt.get("status") != fault.get("status"):
        return f"fault http_error {fault.get('status')} scripted for model attempt {n}: served {attempt.get('status')}"
    if kind == "overloaded" and attempt.get("status") not in _OVERLOADED_STATUSES:
        return f"fault overloaded scripted for model attempt {n}: served {attempt.get('status')}"
    return None


@check(
    "witness.faults_played",
    kind=Kind.BEHAVIORAL,
    evidence=("E1", "E7"),
    location="$[?(@.event=='attempt')].fault",
    needs=("witness",),
)
def faults_played(ev: Evidence) -> list[str]:
    """Every scripted fault was played on the wire as scripted: the scenario was exercised, whatever the rollout says.

    Lie caught: an episode passing a fault scenario (a retry_429 whose witness shows no 429 served, a stream_cut
    with no cut) on the honesty of a run that never met the fault. A repeating fault must be played at least at
    its first attempt; later attempts are the harness's choice.
    """
    model = ev.w.attempts("model")
    by_index = {a.get("model_attempt"): a for a in model}
    reasons = []
    for fault in ev.scenario.get("faults") or []:
        why = _fault_reason(fault, by_index.get(fault["attempt"]), model)
        if why:
            reasons.append(why)
    return reasons
