"""Scenario model for the proxy: reads the scenario JSON and says which fault or step comes next."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from proxy_addons.delivery_code_tool import FinalTool, FinalToolError, parse_final_tool
from proxy_addons.faults import (
    CUT,
    DEFAULT_CUT_PAUSE_SECONDS,
    DEFAULT_WITHHOLD_MAX_SECONDS,
    FAULT_KINDS,
    HTTP_ERROR,
    QUOTA,
    RESET,
    WITHHOLD,
    Fault,
    FaultError,
    is_int,
    parse_faults,
)

SCENARIO_SCHEMA = "probe-scenario/v1"

# Defaults from scenarios/scenario.schema.json. The orchestrator normally fills them in, but the proxy
# must not depend on that (it ships alone and cannot validate against the schema: no jsonschema here).
DEFAULT_MODEL = "probe-model"
DEFAULT_USAGE = True
DEFAULT_EXIT_CODE = 0
# Deliveries a harness profile may name (proxy_addons/delivery_*.py): how a step reaches a text-driven harness.
DELIVERIES = frozenset({"keystrokes", "python_blocks"})
# `harness_profile.tool_call_ids`: how the ids of the calls the script issues are spelled (proxy_addons/call_ids.py).
TOOL_CALL_ID_STYLES = frozenset({"alphanumeric"})

# Faults are read by proxy_addons/faults.py; the names are kept here for the modules and tests that take them from
# the scenario model.
__all__ = [
    "CUT",
    "DEFAULT_CUT_PAUSE_SECONDS",
    "DEFAULT_WITHHOLD_MAX_SECONDS",
    "FAULT_KINDS",
    "HTTP_ERROR",
    "RESET",
    "WITHHOLD",
    "Fault",
    "FinalAnswerStep",
    "Scenario",
    "ScenarioError",
    "Step",
    "ToolCallSpec",
    "ToolCallsStep",
    "load_scenario",
    "parse_scenario",
]


class ScenarioError(ValueError):
    """The scenario file is missing, not JSON, or does not describe a playable scenario."""


@dataclass(frozen=True)
class ToolCallSpec:
    """One scripted shell tool call: only its exit code is scripted; ids and tokens are minted per reply."""

    exit_code: int = DEFAULT_EXIT_CODE


@dataclass(frozen=True)
class ToolCallsStep:
    """A scripted reply made of one or more (parallel) shell tool calls."""

    calls: tuple[ToolCallSpec, ...]


@dataclass(frozen=True)
class FinalAnswerStep:
    """The scripted final assistant message."""

    answer: str


Step = ToolCallsStep | FinalAnswerStep


@dataclass(frozen=True)
class Scenario:
    """The parts of a scenario the provider plays; scope and expectations stay with the orchestrator."""

    name: str
    model: str
    usage: bool
    steps: tuple[Step, ...]
    faults: tuple[Fault, ...]
    sha256: str | None = None
    # From `harness_profile.final_answer` (set by the orchestrator per harness): when set, the final answer is
    # played as one shell call whose output is this prefix line followed by the answer.
    final_answer_shell_prefix: str | None = None
    # From `harness_profile.final_answer: {via: tool, ...}`: the final answer is played as a call of this tool.
    final_answer_tool: FinalTool | None = None
    # From `harness_profile.delivery`: how a step reaches a harness that takes no native tool calls (e.g.
    # `keystrokes` for Terminus 2); None plays steps as native tool calls.
    delivery: str | None = None
    # From `harness_profile.tool_call_ids`: `alphanumeric` issues ids of letters and digits only (proxy_addons/
    # call_ids.py); None keeps each protocol's own ids.
    tool_call_ids: str | None = None
    # The model's context window in tokens (context_compaction): usage near it, and reported where asked.
    context_window: int | None = None

    def fault_for(self, model_attempt: int) -> Fault | None:
        """Return the fault that answers `model_attempt`, if any (a quota is the interpreter's to apply: `quota`).

        An exact match wins over an earlier repeating fault, so a scenario can still script a
        specific attempt after a `repeat` one without the order of `faults` mattering.
        """
        for fault in self.faults:
            if fault.attempt == model_attempt and fault.kind != QUOTA:
                return fault
        repeating = [f for f in self.faults if f.repeat and f.attempt <= model_attempt]
        return max(repeating, key=lambda f: f.attempt) if repeating else None

    @property
    def quota(self) -> Fault | None:
        """The scenario's request quota, if it scripts one."""
        return next((f for f in self.faults if f.kind == QUOTA), None)


def load_scenario(path: str | Path) -> Scenario:
    """Read and interpret the scenario JSON file at `path`, recording its sha256."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ScenarioError(f"cannot read scenario file {path}: {exc}") from exc
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ScenarioError(f"scenario file {path} is not JSON: {exc}") from exc
    return parse_scenario(data, sha256=hashlib.sha256(raw).hexdigest())


def parse_scenario(data: object, sha256: str | None = None) -> Scenario:
    """Interpret an already-parsed scenario document, applying the schema defaults."""
    doc = _mapping(data, "scenario")
    if doc.get("schema") != SCENARIO_SCHEMA:
        raise ScenarioError(f"scenario `schema` must be {SCENARIO_SCHEMA!r}, got {doc.get('schema')!r}")
    name = doc.get("name")
    if not isinstance(name, str) or not name:
        raise ScenarioError("scenario `name` must be a non-empty string")
    model = doc.get("model", DEFAULT_MODEL)
    if not isinstance(model, str) or not model:
        raise ScenarioError("scenario `model` must be a non-empty string")
    usage = doc.get("usage", DEFAULT_USAGE)
    if not isinstance(usage, bool):
        raise ScenarioError("scenario `usage` must be a boolean")
    steps = _parse_steps(doc.get("script"))
    faults = _parse_faults(doc.get("faults", []))
    final_tool = _final_answer_tool(doc.get("harness_profile"))
    prefix = None if final_tool is not None else _final_answer_shell_prefix(doc.get("harness_profile"))
    window = doc.get("context_window")
    if window is not None and (not isinstance(window, int) or isinstance(window, bool) or window < 1024):
        raise ScenarioError("scenario `context_window` must be an integer of at least 1024")
    return Scenario(
        name=name,
        model=model,
        usage=usage,
        steps=steps,
        faults=faults,
        sha256=sha256,
        final_answer_shell_prefix=prefix,
        final_answer_tool=final_tool,
        delivery=_delivery(doc.get("harness_profile")),
        tool_call_ids=_tool_call_ids(doc.get("harness_profile")),
        context_window=window,
    )


def _final_answer_tool(value: object) -> FinalTool | None:
    """`harness_profile.final_answer` when it says `via: tool` (delivery_code_tool), else None."""
    if not isinstance(value, Mapping) or not isinstance(value.get("final_answer"), Mapping):
        return None
    final = value["final_answer"]
    if final.get("via") != "tool":
        return None
    try:
        return parse_final_tool(final)
    except FinalToolError as exc:
        raise ScenarioError(str(exc)) from None


def _final_answer_shell_prefix(value: object) -> str | None:
    """The prefix of `harness_profile.final_answer` when the final answer goes through the shell, else None."""
    if value is None:
        return None
    profile = _mapping(value, "harness_profile")
    foreign = set(profile) - {"final_answer", "delivery", "tool_call_ids"}
    if foreign:
        raise ScenarioError(f"harness_profile: unknown key(s) {sorted(foreign)}")
    if profile.get("final_answer") is None:
        return None
    final = _mapping(profile["final_answer"], "harness_profile.final_answer")
    if final.get("via") != "shell" or set(final) != {"via", "prefix"}:
        raise ScenarioError("harness_profile.final_answer must be exactly {via: shell, prefix: ...}")
    prefix = final["prefix"]
    # The harness reads the prefix as the first output line: it must be one non-empty line.
    if not isinstance(prefix, str) or not prefix.strip() or "\n" in prefix or "\r" in prefix:
        raise ScenarioError("harness_profile.final_answer.prefix must be one non-empty line")
    return prefix


def _delivery(value: object) -> str | None:
    """`harness_profile.delivery` (already known to be in a valid profile), or None."""
    delivery = value.get("delivery") if isinstance(value, Mapping) else None
    if delivery is not None and delivery not in DELIVERIES:
        raise ScenarioError(f"harness_profile.delivery must be one of {sorted(DELIVERIES)}")
    return delivery if isinstance(delivery, str) else None


def _tool_call_ids(value: object) -> str | None:
    """`harness_profile.tool_call_ids` (already known to be in a valid profile), or None."""
    style = value.get("tool_call_ids") if isinstance(value, Mapping) else None
    if style is not None and style not in TOOL_CALL_ID_STYLES:
        raise ScenarioError(f"harness_profile.tool_call_ids must be one of {sorted(TOOL_CALL_ID_STYLES)}")
    return style if isinstance(style, str) else None


def _mapping(value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ScenarioError(f"{what} must be an object")
    return value


def _parse_steps(value: object) -> tuple[Step, ...]:
    if not isinstance(value, list) or not value:
        raise ScenarioError("scenario `script` must be a non-empty list")
    steps: list[Step] = []
    for index, raw in enumerate(value):
        entry = _mapping(raw, f"script[{index}]")
        if set(entry) == {"tool_calls"}:
            calls_raw = entry["tool_calls"]
            if not isinstance(calls_raw, list) or not calls_raw:
                raise ScenarioError(f"script[{index}].tool_calls must be a non-empty list")
            calls: list[ToolCallSpec] = []
            for call_index, call_raw in enumerate(calls_raw):
                call = _mapping(call_raw, f"script[{index}].tool_calls[{call_index}]")
                exit_code = call.get("exit_code", DEFAULT_EXIT_CODE)
                if not is_int(exit_code) or not 0 <= exit_code <= 255:
                    raise ScenarioError(f"script[{index}].tool_calls[{call_index}].exit_code must be 0..255")
                calls.append(ToolCallSpec(exit_code=exit_code))
            steps.append(ToolCallsStep(calls=tuple(calls)))
        elif set(entry) == {"final_answer"}:
            answer = entry["final_answer"]
            if not isinstance(answer, str) or not answer:
                raise ScenarioError(f"script[{index}].final_answer must be a non-empty string")
            if index != len(value) - 1:
                raise ScenarioError("the final answer, if present, must be the last script step")
            steps.append(FinalAnswerStep(answer=answer))
        else:
            raise ScenarioError(f"script[{index}] must have exactly one of `tool_calls` or `final_answer`")
    return tuple(steps)


def _parse_faults(value: object) -> tuple[Fault, ...]:
    try:
        return parse_faults(value)
    except FaultError as exc:
        raise ScenarioError(str(exc)) from None
