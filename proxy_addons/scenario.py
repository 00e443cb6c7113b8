"""Scenario model for the proxy: reads the scenario JSON and says which fault or step comes next."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

SCENARIO_SCHEMA = "probe-scenario/v1"

# Defaults from scenarios/scenario.schema.json. The orchestrator normally fills them in, but the proxy
# must not depend on that (it ships alone and cannot validate against the schema: no jsonschema here).
DEFAULT_MODEL = "probe-model"
DEFAULT_USAGE = True
DEFAULT_EXIT_CODE = 0
DEFAULT_ERROR_TYPE = "probe_error"
DEFAULT_ERROR_MESSAGE = "scripted model failure"

FAULT_KINDS = frozenset({"http_error"})


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
class Fault:
    """A scripted failure answering one model attempt (or, with `repeat`, that attempt and all later ones)."""

    attempt: int
    kind: str
    status: int
    repeat: bool = False
    error_type: str = DEFAULT_ERROR_TYPE
    message: str = DEFAULT_ERROR_MESSAGE
    retry_after: float | None = None


@dataclass(frozen=True)
class Scenario:
    """The parts of a scenario the provider plays; scope and expectations stay with the orchestrator."""

    name: str
    model: str
    usage: bool
    steps: tuple[Step, ...]
    faults: tuple[Fault, ...]
    sha256: str | None = None

    def fault_for(self, model_attempt: int) -> Fault | None:
        """Return the fault that answers `model_attempt`, if any.

        An exact match wins over an earlier repeating fault, so a scenario can still script a
        specific attempt after a `repeat` one without the order of `faults` mattering.
        """
        for fault in self.faults:
            if fault.attempt == model_attempt:
                return fault
        repeating = [f for f in self.faults if f.repeat and f.attempt <= model_attempt]
        return max(repeating, key=lambda f: f.attempt) if repeating else None


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
    return Scenario(name=name, model=model, usage=usage, steps=steps, faults=faults, sha256=sha256)


def _mapping(value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ScenarioError(f"{what} must be an object")
    return value


def _is_int(value: object) -> TypeGuard[int]:
    # bool is an int subclass; a YAML `true` must not pass as exit code 1.
    return isinstance(value, int) and not isinstance(value, bool)


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
                if not _is_int(exit_code) or not 0 <= exit_code <= 255:
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
    if not isinstance(value, list):
        raise ScenarioError("scenario `faults` must be a list")
    faults: list[Fault] = []
    seen: set[int] = set()
    for index, raw in enumerate(value):
        entry = _mapping(raw, f"faults[{index}]")
        attempt = entry.get("attempt")
        if not _is_int(attempt) or attempt < 0:
            raise ScenarioError(f"faults[{index}].attempt must be an integer >= 0")
        if attempt in seen:
            raise ScenarioError(f"faults[{index}]: attempt {attempt} already has a fault")
        seen.add(attempt)
        kind = entry.get("kind")
        if kind not in FAULT_KINDS:
            raise ScenarioError(f"faults[{index}].kind must be one of {sorted(FAULT_KINDS)}")
        status = entry.get("status")
        if not _is_int(status) or not 400 <= status <= 599:
            raise ScenarioError(f"faults[{index}].status must be an HTTP status 400..599")
        repeat = entry.get("repeat", False)
        error_type = entry.get("error_type", DEFAULT_ERROR_TYPE)
        message = entry.get("message", DEFAULT_ERROR_MESSAGE)
        retry_after = entry.get("retry_after")
        if not isinstance(repeat, bool):
            raise ScenarioError(f"faults[{index}].repeat must be a boolean")
        if not isinstance(error_type, str) or not isinstance(message, str):
            raise ScenarioError(f"faults[{index}].error_type and .message must be strings")
        if retry_after is not None and (
            isinstance(retry_after, bool) or not isinstance(retry_after, int | float) or retry_after < 0
        ):
            raise ScenarioError(f"faults[{index}].retry_after must be a number >= 0 or null")
        faults.append(
            Fault(
                attempt=attempt,
                kind=kind,
                status=status,
                repeat=repeat,
                error_type=error_type,
                message=message,
                retry_after=None if retry_after is None else float(retry_after),
            )
        )
    return tuple(faults)
