"""An honest episode of any number of model calls, each file's content as its real writer gives it: the audit
bench's 100,000-call rollout and the fast-path tests' small ones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "episodes" / "tool_success"
TS = "2026-01-01T00:00:00.000Z"


def synthetic_episode(n: int) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]], dict[str, str]]:
    """An honest episode with n model calls: n-1 tool-call replies, then the final answer."""
    scenario = json.loads((FIXTURE / "scenario.json").read_text())
    scenario["script"] = [{"tool_calls": [{"exit_code": 0}]}] * (n - 1) + [{"final_answer": "PROBE_DONE"}]
    inv = "inv-1"
    calls, steps, tools, conv, events, markers = [], [], [], [{"role": "user", "content": "task"}], [], {}

    def event(event_kind: str, **fields: Any) -> None:
        events.append({"schema": "probe-witness/v1", "event": event_kind, "seq": len(events), "at": TS, **fields})

    event("start", scenario="tool_success", addon_version="bench")
    for i in range(n):
        final = i == n - 1
        rid, cid, token = f"chatcmpl-{i}", f"call_{i}", f"probe_{i}"
        usage = {"prompt": 100 + i, "completion": 7, "reasoning": 2, "total": 107 + i, "cached": 3}
        calls.append({
            "model_call_id": f"mc-{i}", "started_at": TS, "completed_at": TS, "protocol": "chat", "status_code": 200,
            "response_id": rid, "finish_reason": "stop" if final else "tool_calls", "error_category": None,
            "token_stats": usage, "invocation_id": inv,
        })  # fmt: skip
        steps.append({"step_no": i + 1, "invocation_id": inv, "timestamp": TS, "model_call_refs": [f"mc-{i}"]})
        args = {"command": f"echo {token}"}
        event(
            "attempt", attempt_id=f"attempt-{i}", kind="model", model_attempt=i, started_at=TS, completed_at=TS,
            method="POST", path="/v1/chat/completions", protocol="chat", stream=False, headers={}, request=None,
            request_sha256=None, status=200, response=None, sse_events=None, ended="complete", response_id=rid,
            finish_reason="stop" if final else "tool_calls", usage=usage, step=i,
            reply_kind="final_answer" if final else "tool_calls", answer="PROBE_DONE" if final else None,
            tool_call_ids=[] if final else [cid],
        )  # fmt: skip
        if final:
            conv.append({"role": "assistant", "content": "PROBE_DONE"})
            break
        event("tool_call", attempt_id=f"attempt-{i}", tool_call_id=cid, name="bash", arguments=args,
              command=args["command"], marker_path=f"/probe/markers/{cid}.txt", token=token, exit_code=0)  # fmt: skip
        event("tool_result_seen", attempt_id=f"attempt-{i + 1}", tool_call_id=cid, output=token + "\n",
              token_present=True)  # fmt: skip
        event("marker", tool_call_id=cid, present=True, matches=True)
        markers[f"{cid}.txt"] = token
        conv.append({"role": "assistant", "content": None, "tool_calls": [{"tool_call_id": cid, "tool_name": "bash",
                                                                        "arguments": args}]})  # fmt: skip
        conv.append({"role": "tool", "content": token + "\n", "tool_call_id": cid})
        tools.append({"tool_call_id": cid, "tool_name": "bash", "arguments": args, "status": "succeeded",
                      "exit_code": 0, "output": token + "\n", "invocation_id": inv, "step_no": i + 1})  # fmt: skip
    event("end", attempts=n, finished=True)
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
