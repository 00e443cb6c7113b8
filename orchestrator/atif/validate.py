"""Validation of an ATIF document: our JSON Schema, then the cross-field rules Harbor's models check in code; and
of our own extension in it (`extra.harness_probe`, probe-atif-extension/v1) wherever a trajectory carries it."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from orchestrator.atif.write import EXTENSION
from orchestrator.evidence import Fault, FormatError, fragment_faults, schema_path
from orchestrator.evidence.jsonread import JsonFault, read_json

__all__ = [
    "ATIF_FORMAT",
    "EXTENSION_FORMAT",
    "MAX_LLM_CALLS",
    "atif_faults",
    "extension_faults",
    "load_atif",
    "validate_atif",
    "validate_extension",
]

ATIF_FORMAT = "atif/v1"
# The most LLM calls one trajectory's steps may stand for (`llm_call_count`, summed over it and its subagents): a
# reader builds a record per call, so a 1 KiB trajectory could ask for 10^15. The cap is the largest rollout the
# audit is built and benchmarked for (100,000 calls); a collected rollout holding more is over the byte cap anyway.
MAX_LLM_CALLS = 100_000
EXTENSION_FORMAT = "probe-atif-extension/v1"


@cache
def _validator() -> Draft202012Validator:
    # Not the shared validator: ATIF nests whole trajectories (subagents) through a recursive `$ref: "#"`,
    # which the shared one's $ref inlining refuses by design.
    schema = json.loads(schema_path(ATIF_FORMAT).read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _path(parts: Any) -> str:
    out = "$"
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _rules(doc: dict[str, Any], at: str) -> list[Fault]:
    found = []
    raw = doc.get("steps")
    steps: list[Any] = raw if isinstance(raw, list) else []
    for i, step in enumerate(steps):
        if not isinstance(step, dict):
            continue
        if step.get("step_id") != i + 1:
            found.append(
                Fault(f"{at}.steps[{i}].step_id", f"expected {i + 1} (sequential from 1), got {step.get('step_id')!r}")
            )
        ids = {tc.get("tool_call_id") for tc in step.get("tool_calls") or [] if isinstance(tc, dict)}
        results = (step.get("observation") or {}).get("results") or []
        for j, res in enumerate(results):
            sid = res.get("source_call_id") if isinstance(res, dict) else None
            if sid is not None and sid not in ids:
                found.append(
                    Fault(
                        f"{at}.steps[{i}].observation.results[{j}].source_call_id",
                        f"{sid!r} is no tool call of this step",
                    )
                )
    seen: set[str] = set()
    for k, sub in enumerate(doc.get("subagent_trajectories") or []):
        if not isinstance(sub, dict):
            continue
        tid = sub.get("trajectory_id")
        if tid is None:
            found.append(Fault(f"{at}.subagent_trajectories[{k}].trajectory_id", "required on an embedded subagent"))
        elif tid in seen:
            found.append(Fault(f"{at}.subagent_trajectories[{k}].trajectory_id", f"{tid!r} is not unique"))
        else:
            seen.add(tid)
        found += _rules(sub, f"{at}.subagent_trajectories[{k}]")
    return found


def atif_faults(doc: Any) -> list[Fault]:
    """Every way `doc` is not an ATIF trajectory, each named by JSONPath; schema faults first, then rules."""
    found = {Fault(_path(e.absolute_path), e.message) for e in _validator().iter_errors(doc)}
    ordered = sorted(found, key=lambda f: (f.path, f.message))
    if not ordered and isinstance(doc, dict):
        ordered += _rules(doc, "$")
        ordered += _call_count(doc)
    return ordered


def _call_count(doc: dict[str, Any]) -> list[Fault]:
    """The calls the trajectory's steps stand for, within MAX_LLM_CALLS (walked without recursion)."""
    total, pending = 0, [doc]
    while pending:
        traj = pending.pop()
        for step in traj.get("steps") or []:
            n = step.get("llm_call_count") if isinstance(step, dict) else None
            total += n if isinstance(n, int) and n > 1 else 1
        pending += [sub for sub in traj.get("subagent_trajectories") or [] if isinstance(sub, dict)]
        if total > MAX_LLM_CALLS:
            return [
                Fault(
                    "$.steps[*].llm_call_count",
                    f"the steps stand for more than {MAX_LLM_CALLS} LLM calls (llm_call_count_cap): "
                    "more than any rollout this tool reads",
                )
            ]
    return []


def extension_faults(doc: dict[str, Any], at: str = "$") -> list[Fault]:
    """Every way the `extra.harness_probe` objects of an ATIF trajectory (valid against atif/v1) are not what
    `atif_to_rollout` reads, each named by JSONPath; a trajectory without the extension has none."""
    found = _extension(doc, "trajectory", at)
    for i, step in enumerate(doc["steps"]):
        found += _extension(step, "step", f"{at}.steps[{i}]")
        for j, call in enumerate(step.get("tool_calls") or []):
            found += _extension(call, "tool_call", f"{at}.steps[{i}].tool_calls[{j}]")
        for j, result in enumerate((step.get("observation") or {}).get("results") or []):
            found += _extension(result, "result", f"{at}.steps[{i}].observation.results[{j}]")
    for k, sub in enumerate(doc.get("subagent_trajectories") or []):
        found += extension_faults(sub, f"{at}.subagent_trajectories[{k}]")
    return found


def _extension(node: dict[str, Any], place: str, at: str) -> list[Fault]:
    extra = node.get("extra")
    if not isinstance(extra, dict) or EXTENSION not in extra:
        return []
    return fragment_faults(extra[EXTENSION], EXTENSION_FORMAT, f"/$defs/{place}", f"{at}.extra.{EXTENSION}")


def validate_extension(doc: dict[str, Any], what: str) -> None:
    found = extension_faults(doc)
    if found:
        raise FormatError(what, found)


def validate_atif(doc: Any, what: str = "ATIF trajectory") -> None:
    found = atif_faults(doc)
    if found:
        raise FormatError(what, found)


def load_atif(path: Path) -> dict[str, Any]:
    """Read and validate an ATIF file; a parse error is a FormatError too, never a traceback."""
    try:
        # The strict reader, as for every other evidence file: no link followed, capped, no duplicate key, depth
        # and integers bounded, no lone surrogate; what it refuses is the writer's fault, named.
        doc = read_json(path)
    except FileNotFoundError:
        raise FormatError(str(path), [Fault("$", "file does not exist")]) from None
    except JsonFault as exc:
        raise FormatError(str(path), [Fault("$", str(exc))]) from None
    validate_atif(doc, str(path))
    assert isinstance(doc, dict)  # the schema's root is an object
    return doc
