"""ATIF core fields held to `extra.harness_probe`: each place a Harbor reader sees a fact the extension also states.

The reader takes a trajectory's calls, tool records and outcome from the extension, which the checks then judge; a
core field saying otherwise (a step's token `metrics`, `final_metrics`, a tool call's `arguments`, the final agent
message) would show a Harbor reader facts no check saw. Each disagreement is a fault against the trajectory's
writer, named by JSONPath, and the trajectory is not read as a rollout (as for an extension that is not ours).
"""

from __future__ import annotations

from typing import Any, cast

from orchestrator.atif.core import (
    TOKEN_KEYS,
    answer_held,
    as_object,
    last_agent_step,
    ok,
    step_metrics,
    totals,
)
from orchestrator.atif.write import EXTENSION, ROLLOUT_FORMAT
from orchestrator.evidence import Fault
from orchestrator.records import Rollout

__all__ = ["core_faults"]

_PLACE_WORDS = {
    "message": "the last agent step's message, with no tool calls",
    "message_text": "within the last agent step's message",
    "tool_arguments": "as an argument's value of a tool call of the last agent step",
    "tool_arguments_text": "within an argument's value of a tool call of the last agent step",
}


def _ext(node: Any) -> dict[str, Any] | None:
    extra = node.get("extra") if isinstance(node, dict) else None
    ext = extra.get(EXTENSION) if isinstance(extra, dict) else None
    return ext if isinstance(ext, dict) else None


def core_faults(doc: dict[str, Any], rollout: Rollout) -> list[Fault]:
    """Every core field of `doc` that disagrees with what its extension gave `rollout` (a trajectory without the
    extension has none: its core fields are all the reader takes)."""
    model_calls = cast(list[Any], rollout["model_calls"])
    calls = {
        c["model_call_id"]: c for c in model_calls if isinstance(c, dict) and isinstance(c.get("model_call_id"), str)
    }
    found: list[Fault] = []
    pending: list[tuple[dict[str, Any], str]] = [(doc, "$")]
    while pending:
        traj, at = pending.pop(0)
        found += _trajectory(traj, at, calls)
        subs = traj.get("subagent_trajectories") or []
        pending += [(s, f"{at}.subagent_trajectories[{k}]") for k, s in enumerate(subs) if isinstance(s, dict)]
    found += _answer(doc)
    return found


def _trajectory(traj: dict[str, Any], at: str, calls: dict[str, dict[str, Any]]) -> list[Fault]:
    found: list[Fault] = []
    for i, step in enumerate(traj["steps"]):
        sext = _ext(step)
        if step.get("source") == "agent" and sext is not None and isinstance(sext.get("model_calls"), list):
            found += _metrics(step, sext["model_calls"], f"{at}.steps[{i}]")
        for j, tc in enumerate(step.get("tool_calls") or []):
            found += _tool_call(tc, f"{at}.steps[{i}].tool_calls[{j}]")
    ext = _ext(traj)
    final = traj.get("final_metrics")
    if ext is not None and isinstance(ext.get("model_call_refs"), list) and isinstance(final, dict):
        own = [calls[r] for r in ext["model_call_refs"] if isinstance(r, str) and r in calls]
        want: dict[str, Any] = {**totals([c for c in own if ok(c)]), "total_steps": len(traj["steps"])}
        for key, value in want.items():
            if key in final and final[key] != value:
                found.append(
                    Fault(
                        f"{at}.final_metrics.{key}",
                        f"{final[key]!r} where the extension's calls of invocation {ext.get('invocation_id')!r} "
                        f"give {value!r}" + (" (the trajectory's steps)" if key == "total_steps" else ""),
                    )
                )
    return found


def _metrics(step: dict[str, Any], attempts: list[Any], at: str) -> list[Fault]:
    call = next((c for c in attempts if isinstance(c, dict) and ok(c)), None)
    want = step_metrics(call) or {}
    raw = step.get("metrics")
    got: dict[str, Any] = raw if isinstance(raw, dict) else {}
    found = []
    for key, _ in TOKEN_KEYS:
        if got.get(key) != want.get(key):
            whose = f"call {call.get('model_call_id')!r}" if call else "no successful call"
            found.append(
                Fault(
                    f"{at}.metrics.{key}",
                    f"{got.get(key)!r} where the step's {whose} in the extension has {want.get(key)!r}",
                )
            )
    return found


def _tool_call(tc: Any, at: str) -> list[Fault]:
    tcext = _ext(tc)
    if tcext is None or not isinstance(tc, dict):
        return []
    raw = tcext.get("record")
    record: dict[str, Any] = raw if isinstance(raw, dict) else {}
    found = []
    if record and record.get("tool_call_id") != tc.get("tool_call_id"):
        found.append(
            Fault(
                f"{at}.tool_call_id",
                f"{tc.get('tool_call_id')!r} where its tool record in the extension is {record.get('tool_call_id')!r}",
            )
        )
    if "function_name_raw" in tcext:
        name, whose = tcext["function_name_raw"], "the history's name the extension keeps"
    else:
        name, whose = record.get("tool_name", tc.get("function_name")), "its tool record's in the extension"
    if tc.get("function_name") != name:
        found.append(Fault(f"{at}.function_name", f"{tc.get('function_name')!r} where {whose} is {name!r}"))
    if "arguments_raw" in tcext:
        want, whose = as_object(tcext["arguments_raw"]), "the history's arguments the extension keeps"
    elif "arguments" in record:
        want, whose = as_object(record["arguments"]), "the arguments of its tool record in the extension"
    else:  # the core arguments are the only statement of them
        return found
    if tc.get("arguments") != want:
        found.append(Fault(f"{at}.arguments", f"{_short(tc.get('arguments'))} where {whose} are {_short(want)}"))
    return found


def _answer(doc: dict[str, Any]) -> list[Fault]:
    ext = _ext(doc)
    if ext is None or ext.get("rollout_format") != ROLLOUT_FORMAT or not isinstance(ext.get("outcome"), dict):
        return []
    recorded = ext["outcome"].get("final_answer")
    answer = recorded if isinstance(recorded, str) else ""
    place = ext.get("final_answer_at", "message")
    step = last_agent_step(doc["steps"])
    if place not in _PLACE_WORDS or answer_held(step, answer, place):
        return []
    at = f"$.steps[{doc['steps'].index(step)}]" if step is not None else "$.steps"
    shown = _short(step.get("message")) if step is not None else "no agent step"
    if not answer:  # a Harbor reader takes a last agent message without tool calls for the answer
        why = f"the extension's outcome records no final answer; the core's last agent message reads as one: {shown}"
        return [Fault(f"{at}.message", why)]
    return [
        Fault(
            f"{at}.tool_calls" if place.startswith("tool_arguments") else f"{at}.message",
            f"the extension's outcome has final answer {_short(answer)}, to be {_PLACE_WORDS[place]}; the core "
            f"shows {shown}" + (" with tool calls" if step is not None and step.get("tool_calls") else ""),
        )
    ]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."
