"""probe-rollout/v1 -> ATIF: the model-visible history as ATIF steps, the facts ATIF has no field for in `extra`.

ATIF holds one agent step per successful inference, its tool calls, their observations and token metrics. What a
canonical rollout knows beyond that (failed attempts and retries of a step, HTTP statuses, response ids, finish
reasons, call times, tool exit codes, the outcome, named gaps) goes under `extra.harness_probe`, Harbor's place for
producer metadata, so a Harbor consumer reads a normal trajectory and `atif_to_rollout` gets every fact back.
"""

from __future__ import annotations

import json
from typing import Any

from orchestrator.atif.core import answer_place, as_object, last_agent_step, ok, step_metrics, totals
from orchestrator.evidence.jsonread import MAX_FILE_BYTES

__all__ = ["EXTENSION", "TooLarge", "rollout_to_atif"]

EXTENSION = "harness_probe"
PASSTHROUGH = ("provenance", "compactions")
_INVOCATION_CORE = ("invocation_id", "parent_invocation_id", "model_call_refs", "conversation")
ROLLOUT_FORMAT = "probe-rollout/v1"


class TooLarge(ValueError):
    """The trajectory's text would be larger than its reader reads (MAX_FILE_BYTES)."""


class _Writer:
    def __init__(self, rollout: dict[str, Any]) -> None:
        self.rollout = rollout
        # A record is copied whole into every step that holds it (every history mention of a tool call, every
        # unattached step), so a 200 KB rollout can make gigabytes of text: the copies' sizes are counted as they are
        # made, and the writing stops once they alone pass what the reader reads, before any text is built.
        self.room = MAX_FILE_BYTES
        self.sizes: dict[int, int] = {}
        self.calls = {c["model_call_id"]: c for c in rollout.get("model_calls", [])}
        self.step_of = {ref: s for s in rollout.get("steps", []) for ref in s.get("model_call_refs", [])}
        self.tools = {t["tool_call_id"]: t for t in rollout.get("tool_calls", [])}
        self.used_calls: set[str] = set()
        self.used_tools: set[str] = set()

    def _copy(self, record: dict[str, Any]) -> dict[str, Any]:
        """`record`, embedded once more: its compact size (a lower bound of its indented one) taken from the room."""
        size = self.sizes.get(id(record))
        if size is None:
            size = self.sizes[id(record)] = len(json.dumps(record, separators=(",", ":")))
        self.room -= size
        if self.room < 0:
            raise TooLarge(
                f"the trajectory would be more than the {MAX_FILE_BYTES}-byte cap its reader reads: the tool and "
                "model call records it copies into its steps alone are larger"
            )
        return record

    def trajectory(self, inv: dict[str, Any], version: str) -> dict[str, Any]:
        successes = [self.calls[r] for r in inv.get("model_call_refs", []) if r in self.calls and ok(self.calls[r])]
        # Where the rollout records steps, they say which calls the history's turns were: a call in no step (a
        # context compaction's summary request) is matched to no agent step. It stays among the unattached calls,
        # and the invocation's own refs keep its place.
        candidates = [c for c in successes if c["model_call_id"] in self.step_of] or successes
        conv = inv.get("conversation", [])
        steps: list[dict[str, Any]] = []
        i = 0
        while i < len(conv):
            m = conv[i]
            i += 1
            text = m.get("content") if isinstance(m.get("content"), str) else ""
            if m.get("role") in ("system", "user") or (m.get("role") == "tool"):
                step: dict[str, Any] = {"step_id": len(steps) + 1, "source": "user", "message": text}
                if m.get("role") == "system":
                    step["source"] = "system"
                elif m.get("role") == "tool":  # a result with no assistant turn before it: kept, marked
                    step["extra"] = {EXTENSION: {"role": "tool", "tool_call_id": m.get("tool_call_id")}}
                steps.append(step)
                continue
            results = []
            while i < len(conv) and conv[i].get("role") == "tool":
                results.append(conv[i])
                i += 1
            steps.append(self._agent_step(len(steps) + 1, m, results, candidates))
        if not steps:  # ATIF needs one step; an empty history is said so, not hidden
            steps.append({"step_id": 1, "source": "system", "message": "", "extra": {EXTENSION: {"empty": True}}})
        unattached = [
            s
            for s in self.rollout.get("steps", [])
            if s.get("invocation_id") == inv["invocation_id"]
            and not any(r in self.used_calls for r in s.get("model_call_refs", []))
        ]
        ext = {
            "invocation_id": inv["invocation_id"],
            "parent_invocation_id": inv.get("parent_invocation_id"),
            # In its order and with calls no step holds, which the steps alone cannot give back.
            "model_call_refs": inv.get("model_call_refs", []),
            # Fields of the invocation beyond what the trajectory itself says (e.g. session token_totals).
            "invocation_extra": {k: v for k, v in inv.items() if k not in _INVOCATION_CORE},
            "unattached_steps": [
                {
                    **s,
                    "model_calls": [self._copy(self.calls[r]) for r in s.get("model_call_refs", []) if r in self.calls],
                }
                for s in unattached
            ],
        }
        for s in unattached:
            self.used_calls.update(s.get("model_call_refs", []))
        return {
            "schema_version": version,
            "session_id": self.rollout.get("rollout_id"),
            "trajectory_id": inv["invocation_id"],
            "agent": {
                "name": self.rollout["harness"]["name"],
                "version": self.rollout["harness"].get("version") or "unknown",
            },
            "steps": steps,
            "final_metrics": {**totals(successes), "total_steps": len(steps)},
            "extra": {EXTENSION: ext},
        }

    def _agent_step(
        self, step_id: int, m: dict[str, Any], results: list[dict[str, Any]], candidates: list[dict[str, Any]]
    ) -> dict[str, Any]:
        own = m.get("origin") == "harness"  # a turn the harness wrote itself: no model call made it
        step: dict[str, Any] = {
            "step_id": step_id,
            "source": "agent",
            "message": m.get("content") if isinstance(m.get("content"), str) else "",
            "llm_call_count": 0 if own else 1,
        }
        ext: dict[str, Any] = {}
        call = None if own else next((c for c in candidates if c["model_call_id"] not in self.used_calls), None)
        if call is not None:
            rstep = self.step_of.get(call["model_call_id"])
            refs = rstep["model_call_refs"] if rstep else [call["model_call_id"]]
            attempts = [self.calls[r] for r in refs if r in self.calls and r not in self.used_calls]
            self.used_calls.update(c["model_call_id"] for c in attempts)
            # A step the rollout records keeps its own time or none: its call's completion is not the step's time,
            # and the checks hold a step's time to the wire. Without steps, the call's completion is all there is.
            when = rstep.get("timestamp") if rstep else call.get("completed_at")
            if when is not None:
                step["timestamp"] = when
            # The step's call is its first success (the others of the step are its failed attempts): the reader
            # holds the metrics to that call.
            step["metrics"] = step_metrics(next(c for c in attempts if ok(c)))
            ext["model_calls"] = [self._copy(c) for c in attempts]
            if rstep:
                ext["step_no"] = rstep["step_no"]
        else:
            ext["model_calls"] = []
        if m.get("content") is None:
            ext["content_null"] = True
        if m.get("tool_calls") == []:
            ext["tool_calls_empty"] = True
        if "origin" in m:  # who wrote the turn (the harness itself): ATIF's `source` says only "agent"
            ext["origin"] = m["origin"]
        calls_out = []
        for tc in m.get("tool_calls") or []:
            args = tc.get("arguments")
            rec = self.tools.get(tc.get("tool_call_id"))
            # The core arguments are the history's as an object; the reader holds them to the tool record's, so the
            # history's own are kept beside them wherever they are not those (text, or other than the record's).
            differ = not isinstance(args, dict) or (rec is not None and as_object(rec.get("arguments")) != args)
            tc_ext: dict[str, Any] = {"arguments_raw": args} if differ else {}
            if rec is not None:
                self.used_tools.add(rec["tool_call_id"])
                tc_ext["record"] = self._copy(rec)
                if rec.get("tool_name") != tc.get("tool_name"):  # the core name is held to the record's otherwise
                    tc_ext["function_name_raw"] = tc.get("tool_name")
            else:  # never run as a tool (a prefilled turn, a finish call): read back, it makes no tool record
                tc_ext["no_record"] = True
            calls_out.append(
                {
                    "tool_call_id": tc.get("tool_call_id"),
                    "function_name": tc.get("tool_name"),
                    "arguments": as_object(args),
                    "extra": {EXTENSION: tc_ext},
                }
            )
        if calls_out:
            step["tool_calls"] = calls_out
        ids = {c["tool_call_id"] for c in calls_out}
        if results:
            step["observation"] = {
                "results": [
                    {"source_call_id": r.get("tool_call_id"), "content": r.get("content")}
                    if r.get("tool_call_id") in ids
                    # A result answering a call of an earlier turn cannot reference it in ATIF; its id rides along.
                    else {"content": r.get("content"), "extra": {EXTENSION: {"tool_call_id": r.get("tool_call_id")}}}
                    for r in results
                ]
            }
        step["extra"] = {EXTENSION: ext}
        return step


def rollout_to_atif(rollout: dict[str, Any], version: str = "ATIF-v1.8") -> dict[str, Any]:
    """One ATIF trajectory for a probe-rollout/v1 dict: the root invocation, the others as embedded subagents."""
    w = _Writer(rollout)
    invs = list(rollout.get("invocations", []))
    if not invs:
        invs = [
            {
                "invocation_id": rollout.get("rollout_id") or "root",
                "parent_invocation_id": None,
                "model_call_refs": [c["model_call_id"] for c in rollout.get("model_calls", [])],
                "conversation": [],
            }
        ]
        synthetic = True
    else:
        synthetic = False
    root_inv = next((v for v in invs if v.get("parent_invocation_id") is None), invs[0])
    doc = w.trajectory(root_inv, version)
    subs = [w.trajectory(v, version) for v in invs if v is not root_inv]
    if subs:
        doc["subagent_trajectories"] = subs
    ext = doc["extra"][EXTENSION]
    ext.update(
        {
            "rollout_format": ROLLOUT_FORMAT,
            "harness": rollout.get("harness"),
            "task_id": rollout.get("task_id"),
            "rollout_id": rollout.get("rollout_id"),
            "no_invocations": synthetic,
            "outcome": rollout.get("outcome"),
            "gaps": rollout.get("gaps", []),
            "unattached_model_calls": [c for cid, c in w.calls.items() if cid not in w.used_calls],
            "unattached_tool_calls": [t for tid, t in w.tools.items() if tid not in w.used_tools],
            # The rollout's own record order (checks read it: calls in start order), which steps cannot carry.
            "order": {
                "model_calls": [c["model_call_id"] for c in rollout.get("model_calls", [])],
                "tool_calls": [t["tool_call_id"] for t in rollout.get("tool_calls", [])],
                "steps": [[s.get("invocation_id"), s.get("step_no")] for s in rollout.get("steps", [])],
            },
        }
    )
    # Where the core shows the final answer, when it is not the last agent message itself (the reader holds the core
    # to it there); with none recorded, "nowhere" says a last agent message that reads as one is not it.
    answer = (rollout.get("outcome") or {}).get("final_answer")
    place = answer_place(last_agent_step(doc["steps"]), answer if isinstance(answer, str) else "")
    if place != "message":
        ext["final_answer_at"] = place
    if isinstance(rollout.get("extensions"), dict):
        ext["extensions"] = rollout["extensions"]
    # Optional top-level facts ATIF has no place for, kept whole so a round trip gives them back.
    for key in PASSTHROUGH:
        if key in rollout:
            ext[key] = rollout[key]
    return doc
