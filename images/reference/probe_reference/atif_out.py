"""The reference agent's rollout rewritten as plain ATIF (core fields only), for probing the generic `-H atif` harness.

Run after the agent: `python -m probe_reference.atif_out ROLLOUT TRAJECTORY`. It writes what an ATIF-native harness
would: one step per conversation message, an agent step's tool calls with their observations, and the token metrics
of the inference that succeeded. What ATIF has no field for (failed attempts, HTTP status, exit codes) is left out,
so the reader names it as a gap; nothing here is taken from anywhere but the agent's own rollout.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["main", "rollout_to_atif"]


def _metrics(calls: list[dict[str, Any]]) -> dict[str, Any] | None:
    ok = [c for c in calls if isinstance(c.get("status_code"), int) and 200 <= c["status_code"] < 300]
    if not ok:
        return None
    stats = ok[-1].get("token_stats") or {}
    return {"prompt_tokens": stats.get("prompt"), "completion_tokens": stats.get("completion"),
            "cached_tokens": stats.get("cached")}  # fmt: skip


def _arguments(raw: Any) -> dict[str, Any]:
    return raw if isinstance(raw, dict) else {"raw": raw}


def rollout_to_atif(rollout: dict[str, Any], model: str) -> dict[str, Any]:
    calls = {c["model_call_id"]: c for c in rollout.get("model_calls", [])}
    invocation = rollout["invocations"][0]
    steps = [s for s in rollout.get("steps", []) if s.get("invocation_id") == invocation["invocation_id"]]
    out: list[dict[str, Any]] = []
    agent_steps = 0
    for entry in invocation["conversation"]:
        role, content = entry["role"], entry.get("content") or ""
        if role == "tool":
            if out and out[-1]["source"] == "agent":
                observation = out[-1].setdefault("observation", {"results": []})
                observation["results"].append({"source_call_id": entry.get("tool_call_id"), "content": content})
            continue
        step: dict[str, Any] = {"step_id": len(out) + 1, "source": "agent" if role == "assistant" else role}
        step["message"] = content
        if role == "assistant":
            recorded = steps[agent_steps] if agent_steps < len(steps) else {}
            agent_steps += 1
            step["timestamp"] = recorded.get("timestamp")
            step["model_name"] = model
            tool_calls = entry.get("tool_calls") or []
            step["tool_calls"] = [
                {"tool_call_id": t["tool_call_id"], "function_name": t["tool_name"],
                 "arguments": _arguments(t["arguments"])}
                for t in tool_calls
            ] or None  # fmt: skip
            step["metrics"] = _metrics([calls[r] for r in recorded.get("model_call_refs", []) if r in calls])
        out.append(step)
    harness = rollout.get("harness") or {}
    return {
        "schema_version": "ATIF-v1.6",
        "session_id": rollout.get("rollout_id"),
        "agent": {"name": str(harness.get("name") or "probe-reference"), "version": str(harness.get("version") or "0"),
                  "model_name": model},
        "steps": out,
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (2, 3):
        print("usage: python -m probe_reference.atif_out ROLLOUT TRAJECTORY [MODEL]", file=sys.stderr)
        return 2
    rollout = json.loads(Path(args[0]).read_text())
    doc = rollout_to_atif(rollout, args[2] if len(args) == 3 else "probe-model")
    target = Path(args[1])
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    os.replace(tmp, target)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
