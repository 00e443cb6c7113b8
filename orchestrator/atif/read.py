"""ATIF -> probe-rollout/v1: what a trajectory says, and a named gap for each fact ATIF has no field for.

Read from the core fields only, an ATIF agent step is one successful inference with its token metrics, tool calls
and observations. ATIF records no failed attempt, retry, HTTP status, response id, finish reason, protocol, call
start or end, reasoning token count, tool exit code or terminal error, so those stay null and are named in `gaps`
(the checks then judge the trajectory for what it could hold). A trajectory written by `rollout_to_atif` carries
those facts under `extra.harness_probe`, and they are read back from there.
"""

from __future__ import annotations

from typing import Any, cast

from orchestrator.atif.core import text as _text
from orchestrator.atif.write import EXTENSION, PASSTHROUGH, ROLLOUT_FORMAT
from orchestrator.records import Rollout

__all__ = ["ATIF_GAPS", "atif_to_rollout"]

ATIF_GAPS: list[dict[str, Any]] = [
    {
        "code": "model_calls.failed_attempts_unrecordable",
        "detail": "ATIF has no record for a model attempt that failed (HTTP error, timeout, cut reply) or was "
        "retried: an agent step stands for the inference that succeeded",
        "labels": ["E1", "E7", "E8", "E9"],
    },
    {
        "code": "model_calls.wire_identity_unrecordable",
        "detail": "ATIF records no HTTP status, provider response id, finish reason or protocol of a call; "
        "status_code, response_id, finish_reason and protocol are null",
        "labels": ["E1"],
    },
    {
        "code": "model_calls.timing_unrecordable",
        "detail": "ATIF gives a step one timestamp, not the start and end of its call; started_at and "
        "completed_at are null and the step keeps the timestamp",
        "labels": ["E1"],
    },
    {
        "code": "model_calls.reasoning_tokens_unrecordable",
        "detail": "ATIF metrics hold prompt, completion and cached tokens; reasoning tokens are null, and the "
        "total is prompt + completion where both are known",
        "labels": ["E2"],
    },
    {
        "code": "tool_calls.status_unrecordable",
        "detail": "ATIF records no exit code or status of a tool call; status and exit_code are null",
        "labels": ["E5"],
    },
    {
        "code": "outcome.error_unrecordable",
        "detail": "ATIF has no field for a terminal error; the final answer is the last agent message without "
        "tool calls, and a run without one has outcome status unknown",
        "labels": ["E6"],
    },
]


def _ext(obj: Any) -> dict[str, Any]:
    extra = obj.get("extra") if isinstance(obj, dict) else None
    ext = extra.get(EXTENSION) if isinstance(extra, dict) else None
    return ext if isinstance(ext, dict) else {}


def _stats(metrics: Any) -> dict[str, int | None]:
    m = metrics if isinstance(metrics, dict) else {}
    prompt, completion = m.get("prompt_tokens"), m.get("completion_tokens")
    total = prompt + completion if isinstance(prompt, int) and isinstance(completion, int) else None
    return {
        "prompt": prompt,
        "completion": completion,
        "reasoning": None,
        "total": total,
        "cached": m.get("cached_tokens"),
    }


class _Reader:
    def __init__(self) -> None:
        self.model_calls: list[dict[str, Any]] = []
        self.invocations: list[dict[str, Any]] = []
        self.steps: list[dict[str, Any]] = []
        self.tool_calls: list[dict[str, Any]] = []
        self.aggregated: list[int] = []

    def walk(self, traj: dict[str, Any], parent: str | None, fallback_id: str) -> None:
        ext = _ext(traj)
        inv_id = ext.get("invocation_id") or traj.get("trajectory_id") or traj.get("session_id") or fallback_id
        parent = ext.get("parent_invocation_id", parent)
        conversation: list[dict[str, Any]] = []
        refs: list[str] = []
        step_no = 0
        for step in traj["steps"]:
            sext = _ext(step)
            text = _text(step.get("message"))
            if step["source"] != "agent":
                if sext.get("empty"):
                    continue
                role = sext.get("role", step["source"])
                msg: dict[str, Any] = {"role": role, "content": text}
                if role == "tool":
                    msg["tool_call_id"] = sext.get("tool_call_id")
                conversation.append(msg)
                conversation += self._observation(step, set())
                continue
            tcs = step.get("tool_calls") or []
            # `content_null` gives back a turn with no content from the core's "": a message the core does show (an
            # edit, or another writer's) is what a Harbor reader sees, and is read as the turn's text.
            msg = {"role": "assistant", "content": None if sext.get("content_null") and not text else text}
            if tcs:
                msg["tool_calls"] = [
                    {
                        "tool_call_id": tc["tool_call_id"],
                        "tool_name": tc["function_name"],
                        "arguments": _ext(tc).get("arguments_raw", tc["arguments"]),
                    }
                    for tc in tcs
                ]
            elif sext.get("tool_calls_empty"):
                msg["tool_calls"] = []
            if sext.get("origin") in ("model", "harness"):
                msg["origin"] = sext["origin"]
            conversation.append(msg)
            if step.get("llm_call_count") != 0:
                step_no += 1
                calls = self._calls(step, sext, inv_id)
                refs += [c["model_call_id"] for c in calls]
                if calls or "model_calls" not in sext:
                    self.steps.append(
                        {
                            "step_no": sext.get("step_no", step_no),
                            "invocation_id": inv_id,
                            "timestamp": step.get("timestamp"),
                            "model_call_refs": [c["model_call_id"] for c in calls],
                        }
                    )
            results = self._observation(step, {tc["tool_call_id"] for tc in tcs})
            conversation += results
            for tc in tcs:
                record = _ext(tc).get("record")
                if isinstance(record, dict):
                    self.tool_calls.append(record)
                    continue
                if _ext(tc).get("no_record") is True:  # the rollout recorded no tool call for it: none is made up
                    continue
                outputs = [r["content"] for r in results if r.get("tool_call_id") == tc["tool_call_id"]]
                self.tool_calls.append(
                    {
                        "tool_call_id": tc["tool_call_id"],
                        "tool_name": tc["function_name"],
                        "arguments": tc["arguments"],
                        "status": None,
                        "exit_code": None,
                        "output": outputs[0] if len(outputs) == 1 else None,
                        "invocation_id": inv_id,
                        "step_no": step_no,
                    }
                )
        for s in ext.get("unattached_steps", []):
            calls = s.get("model_calls", [])
            self.model_calls += calls
            refs += [c["model_call_id"] for c in calls]
            self.steps.append({k: v for k, v in s.items() if k != "model_calls"})
        extra = ext.get("invocation_extra")
        self.invocations.append(
            {
                "invocation_id": inv_id,
                "parent_invocation_id": parent,
                "model_call_refs": ext["model_call_refs"] if isinstance(ext.get("model_call_refs"), list) else refs,
                "conversation": conversation,
                **(extra if isinstance(extra, dict) else {}),
            }
        )
        for k, sub in enumerate(traj.get("subagent_trajectories") or []):
            self.walk(sub, inv_id, f"{inv_id}/sub-{k + 1}")

    def _calls(self, step: dict[str, Any], sext: dict[str, Any], inv_id: str) -> list[dict[str, Any]]:
        if isinstance(sext.get("model_calls"), list):
            calls = [dict(c) for c in sext["model_calls"] if isinstance(c, dict)]
            self.model_calls += calls
            return calls
        n = step.get("llm_call_count") or 1
        if n > 1:
            self.aggregated.append(step["step_id"])
        calls = [
            {
                "model_call_id": f"{inv_id}/step-{step['step_id']}" + (f"/call-{k + 1}" if n > 1 else ""),
                "started_at": None,
                "completed_at": None,
                "protocol": None,
                "status_code": None,
                "response_id": None,
                "finish_reason": None,
                "error_category": None,
                # Metrics of a step standing for several calls are their sum: no one call is known to have them.
                "token_stats": _stats(step.get("metrics") if n == 1 else None),
                "invocation_id": inv_id,
            }
            for k in range(n)
        ]
        self.model_calls += calls
        return calls

    @staticmethod
    def _observation(step: dict[str, Any], ids: set[str]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for r in (step.get("observation") or {}).get("results") or []:
            sid = r.get("source_call_id") or _ext(r).get("tool_call_id")
            text = _text(r.get("content"))
            if sid is not None:
                out.append({"role": "tool", "tool_call_id": sid, "content": text})
            elif text is not None:
                # A result tied to no call (Terminus's one screen for all commands) reaches the model as input.
                out.append({"role": "user", "content": text})
        return out


def _derived_outcome(traj: dict[str, Any]) -> dict[str, Any]:
    for step in reversed(traj["steps"]):
        if step["source"] != "agent":
            continue
        text = _text(step.get("message"))
        if not step.get("tool_calls") and text:
            return {"final_answer": text, "status": "completed", "failure_kind": None, "failure_reason": None}
        break
    return {"final_answer": None, "status": "unknown", "failure_kind": None, "failure_reason": None}


def _reorder(items: list[dict[str, Any]], order: Any, key: Any) -> list[dict[str, Any]]:
    if not isinstance(order, list):
        return items
    rank = {(tuple(k) if isinstance(k, list) else k): n for n, k in enumerate(order)}
    return sorted(items, key=lambda x: rank.get(key(x), len(rank)))


def atif_to_rollout(doc: dict[str, Any], harness_name: str | None = None) -> Rollout:
    """A probe-rollout/v1 dict from a validated ATIF trajectory (see `load_atif`)."""
    ext = _ext(doc)
    ours = ext.get("rollout_format") == ROLLOUT_FORMAT
    r = _Reader()
    r.walk(doc, None, doc.get("trajectory_id") or doc.get("session_id") or "atif-root")
    agent = doc["agent"]
    harness = ext.get("harness") if ours and isinstance(ext.get("harness"), dict) else None
    rollout: dict[str, Any] = {
        "schema": ROLLOUT_FORMAT,
        "harness": harness or {"name": harness_name or agent["name"], "version": agent["version"]},
        "task_id": ext.get("task_id") if ours else None,
        "rollout_id": ext.get("rollout_id") if ours else doc.get("session_id") or doc.get("trajectory_id"),
        "model_calls": r.model_calls + (ext.get("unattached_model_calls", []) if ours else []),
        "invocations": r.invocations,
        "steps": r.steps,
        "tool_calls": r.tool_calls + (ext.get("unattached_tool_calls", []) if ours else []),
        "outcome": ext.get("outcome") if ours else _derived_outcome(doc),
        "gaps": list(ext.get("gaps", [])) if ours else [dict(g) for g in ATIF_GAPS],
        "extensions": {"atif": {"schema_version": doc["schema_version"], "agent": agent, "notes": doc.get("notes")}},
    }
    if ours:
        order = ext.get("order") or {}
        rollout["model_calls"] = _reorder(
            rollout["model_calls"], order.get("model_calls"), lambda c: c["model_call_id"]
        )
        rollout["tool_calls"] = _reorder(rollout["tool_calls"], order.get("tool_calls"), lambda t: t["tool_call_id"])
        rollout["steps"] = _reorder(
            rollout["steps"], order.get("steps"), lambda s: (s.get("invocation_id"), s.get("step_no"))
        )
        if ext.get("no_invocations"):
            rollout["invocations"] = []
        for key in PASSTHROUGH:
            if key in ext:
                rollout[key] = ext[key]
        if "extensions" in ext:
            rollout["extensions"] = ext["extensions"]
        else:  # the rollout had none: a round trip gives back the same rollout
            del rollout["extensions"]
    if r.aggregated:
        rollout["gaps"].append(
            {
                "code": "model_calls.aggregated_metrics",
                "detail": f"steps {r.aggregated} each stand for several LLM calls (llm_call_count > 1) with summed "
                "metrics; their calls carry no token counts",
                "labels": ["E2"],
            }
        )
    return cast(Rollout, rollout)  # rebuilt key by key, passthrough included: the checks judge its shape
