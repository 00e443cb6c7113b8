"""An honest episode of any number of tool calls, each file's content as its real writer gives it: the audit
bench's 100,000-call rollout and the fast-path tests' small ones."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "episodes" / "tool_success"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _wire(t: datetime) -> str:
    """A time as the proxy writes it (microseconds): every event's differs, as in a run."""
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _own(t: datetime) -> str:
    """A time as a harness records it (milliseconds)."""
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def synthetic_episode(
    n: int, per_reply: int = 1
) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]], dict[str, str]]:
    """An honest episode of n tool calls, per_reply in each model reply (the last reply may hold fewer), then the
    final answer: ceil(n / per_reply) + 1 model calls."""
    replies = [min(per_reply, n - start) for start in range(0, n, per_reply)]
    scenario = json.loads((FIXTURE / "scenario.json").read_text())
    scenario["script"] = [{"tool_calls": [{"exit_code": 0}] * k} for k in replies] + [{"final_answer": "PROBE_DONE"}]
    inv = "inv-1"
    calls, steps, tools, conv, events, markers = [], [], [], [{"role": "user", "content": "task"}], [], {}

    def event(event_kind: str, **fields: Any) -> None:
        # A microsecond apart within the model call's slot (at most 1 + 3 x 1,000 events: under its 5 ms).
        at = _wire(T0 + timedelta(milliseconds=10 * i + 5, microseconds=len(events) - first))
        events.append({"schema": "probe-witness/v1", "event": event_kind, "seq": len(events), "at": at, **fields})

    i = first = 0  # the start event's time
    event("start", scenario="tool_success", addon_version="bench")
    issued = 0
    for i, k in enumerate([*replies, 0]):
        final = i == len(replies)
        first = len(events) - 1  # offsets from 1: the start event has offset 0 of the first call
        rid = f"chatcmpl-{i}"
        ids = [f"call_{issued + j}" for j in range(k)]
        usage = {"prompt": 100 + i, "completion": 7, "reasoning": 2, "total": 107 + i, "cached": 3}
        # Each model call its own 10 ms: answered 4 ms after it was sent, its events written after that.
        sent, answered = T0 + timedelta(milliseconds=10 * i), T0 + timedelta(milliseconds=10 * i + 4)
        calls.append({
            "model_call_id": f"mc-{i}", "started_at": _own(sent), "completed_at": _own(answered), "protocol": "chat",
            "status_code": 200, "response_id": rid, "finish_reason": "stop" if final else "tool_calls",
            "error_category": None, "token_stats": usage, "invocation_id": inv,
        })  # fmt: skip
        steps.append({"step_no": i + 1, "invocation_id": inv, "timestamp": _own(sent), "model_call_refs": [f"mc-{i}"]})
        event(
            "attempt", attempt_id=f"attempt-{i}", kind="model", model_attempt=i, started_at=_wire(sent),
            completed_at=_wire(answered),
            method="POST", path="/v1/chat/completions", protocol="chat", stream=False, headers={}, request=None,
            request_sha256=None, status=200, response=None, sse_events=None, ended="complete", response_id=rid,
            finish_reason="stop" if final else "tool_calls", usage=usage, step=i,
            reply_kind="final_answer" if final else "tool_calls", answer="PROBE_DONE" if final else None,
            tool_call_ids=ids,
        )  # fmt: skip
        if final:
            conv.append({"role": "assistant", "content": "PROBE_DONE"})
            break
        requested, results = [], []
        for cid in ids:
            token = f"probe_{cid.removeprefix('call_')}"
            args = {"command": f"echo {token}"}
            event("tool_call", attempt_id=f"attempt-{i}", tool_call_id=cid, name="bash", arguments=args,
                  command=args["command"], marker_path=f"/probe/markers/{cid}.txt", token=token,
                  exit_code=0)  # fmt: skip
            event("tool_result_seen", attempt_id=f"attempt-{i + 1}", tool_call_id=cid, output=token + "\n",
                  token_present=True)  # fmt: skip
            event("marker", tool_call_id=cid, present=True, matches=True)
            markers[f"{cid}.txt"] = token
            requested.append({"tool_call_id": cid, "tool_name": "bash", "arguments": args})
            results.append({"role": "tool", "content": token + "\n", "tool_call_id": cid})
            tools.append({"tool_call_id": cid, "tool_name": "bash", "arguments": args, "status": "succeeded",
                          "exit_code": 0, "output": token + "\n", "invocation_id": inv, "step_no": i + 1})  # fmt: skip
        conv.append({"role": "assistant", "content": None, "tool_calls": requested})
        conv.extend(results)
        issued += k
    event("end", attempts=len(calls), finished=True)
    rollout = {
        "schema": "probe-rollout/v1", "harness": {"name": "reference", "version": "bench"}, "task_id": "t",
        "rollout_id": "r", "model_calls": calls,
        "invocations": [{"invocation_id": inv, "parent_invocation_id": None,
                         "model_call_refs": [c["model_call_id"] for c in calls], "conversation": conv}],
        "steps": steps, "tool_calls": tools,
        "outcome": {"final_answer": "PROBE_DONE", "status": "completed", "failure_kind": None, "failure_reason": None},
        "gaps": [],
    }  # fmt: skip
    return scenario, rollout, events, markers
