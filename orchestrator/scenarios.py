"""Scenario files: loading, validation against their schema, defaults, and the task the harness may see."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from orchestrator.evidence import Fault, FormatError, validate
from orchestrator.evidence.jsonread import loads
from orchestrator.evidence.numbers import integral_as_int
from orchestrator.resources import scenarios_dir

SCENARIOS_DIR = scenarios_dir()

__all__ = ["SCENARIOS_DIR", "Scenario", "list_scenarios", "load_scenario"]

_DEFAULTS: dict[str, Any] = {"model": "probe-model", "usage": True, "faults": [], "overrides": {}}


@dataclass(frozen=True)
class Scenario:
    name: str
    path: Path
    data: dict[str, Any]  # validated, defaults filled
    sha256: str  # of the file as read

    @property
    def description(self) -> str:
        return str(self.data["description"])

    @property
    def task(self) -> str:
        """The only scenario text that ever reaches the harness container."""
        return str(self.data["task"])

    @property
    def model(self) -> str:
        return str(self.data["model"])

    @property
    def scope(self) -> dict[str, bool]:
        return dict(self.data["scope"])

    @property
    def expected(self) -> dict[str, Any]:
        return dict(self.data["expected"])

    @property
    def harness_deadline(self) -> float | None:
        """The scenario's own bound on the harness's run time, if it declares one."""
        value = self.data.get("harness_deadline")
        return float(value) if value is not None else None

    def tool_steps(self) -> list[list[dict[str, Any]]]:
        return [s["tool_calls"] for s in self.data["script"] if "tool_calls" in s]

    def final_answer(self) -> str | None:
        last = self.data["script"][-1]
        return str(last["final_answer"]) if "final_answer" in last else None

    def override(self, harness: str) -> dict[str, Any] | None:
        o = self.data["overrides"].get(harness)
        return dict(o) if o else None

    def provider_json(self) -> bytes:
        """What the proxy reads: the whole scenario with defaults, as JSON (the proxy has no YAML parser)."""
        return json.dumps(self.data, indent=2, sort_keys=True).encode()


def _fill_defaults(raw: dict[str, Any]) -> dict[str, Any]:
    data = copy.deepcopy(raw)
    for key, value in _DEFAULTS.items():
        data.setdefault(key, copy.deepcopy(value))
    data["expected"].setdefault("outcome", "completed")
    for step in data["script"]:
        for call in step.get("tool_calls", []):
            call.setdefault("exit_code", 0)
    return data


def _semantic_faults(data: dict[str, Any], path: Path) -> list[Fault]:
    found = []
    if data["name"] != path.stem:
        found.append(Fault("$.name", f"{data['name']!r} must equal the file name {path.stem!r}"))
    for key in ("task", "model"):
        if "\x00" in str(data[key]):
            # Both reach the harness's command line, which cannot carry a NUL: the harness would fail to start
            # ("exec: invalid argument") and the episode be judged as its failure.
            found.append(Fault(f"$.{key}", "holds a NUL character, which no command line can carry"))
    for i, step in enumerate(data["script"][:-1]):
        if "final_answer" in step:
            found.append(Fault(f"$.script[{i}]", "a final_answer step must be the last step"))
    seen: set[int] = set()
    for i, fault in enumerate(data["faults"]):
        if fault["kind"] == "http_error" and "status" not in fault:
            found.append(Fault(f"$.faults[{i}]", "an http_error fault needs a status"))
        if fault["attempt"] in seen:
            found.append(Fault(f"$.faults[{i}].attempt", f"attempt {fault['attempt']} already has a fault"))
        seen.add(fault["attempt"])
    if sum(1 for fault in data["faults"] if fault["kind"] == "quota") > 1:
        found.append(Fault("$.faults", "a scenario has at most one quota"))
    return found


MAX_SCENARIO_BYTES = 1 << 20  # the largest scenario is under 2 KiB
MAX_SCENARIO_DEPTH = 32  # and nests under 8


def _within_budget(text: bytes, path: Path) -> None:
    """Refuse what makes a small file large once loaded: an alias (103 KiB of them are 9,000,000 tool calls),
    nesting past MAX_SCENARIO_DEPTH (50,000 levels are a RecursionError), a file over MAX_SCENARIO_BYTES. Read
    as events, which hold no tree: nothing is built before the budget holds."""
    if len(text) > MAX_SCENARIO_BYTES:
        raise FormatError(str(path), [Fault("$", f"{len(text)} bytes, more than {MAX_SCENARIO_BYTES}")])
    # One frame per open collection: a mapping's keys so far and whether its next node is a key (None: a list).
    frames: list[tuple[set[tuple[str, str]], list[bool]] | None] = []
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            mark = event.start_mark
            raise FormatError(str(path), [Fault("$", f"line {mark.line + 1}: YAML anchors and aliases are refused")])
        if isinstance(event, yaml.NodeEvent) and frames and frames[-1] is not None:
            keys, key_next = frames[-1]
            if key_next[0] and isinstance(event, yaml.ScalarEvent):
                _new_key(keys, event, path)
            key_next[0] = not key_next[0]
        if isinstance(event, yaml.CollectionStartEvent):
            frames.append((set(), [True]) if isinstance(event, yaml.MappingStartEvent) else None)
            if len(frames) > MAX_SCENARIO_DEPTH:
                raise FormatError(str(path), [Fault("$", f"nested more than {MAX_SCENARIO_DEPTH} levels deep")])
        elif isinstance(event, yaml.CollectionEndEvent):
            frames.pop()


_KEYS = yaml.resolver.Resolver()


def _new_key(keys: set[tuple[str, str]], event: yaml.ScalarEvent, path: Path) -> None:
    """A mapping's key seen again is refused: YAML would keep its last value, so a second `faults: []` further down
    would silently take every fault away. Keys are compared as loaded (`faults` and `"faults"` are one key)."""
    assert event.value is not None
    # The tag the loader will give it: a plain `1` is an int, a quoted "1" a string.
    key = (event.tag or _KEYS.resolve(yaml.ScalarNode, event.value, event.implicit), event.value)  # type: ignore[no-untyped-call]
    if key in keys:
        mark = event.start_mark
        where = f"line {mark.line + 1}: " if mark is not None else ""
        raise FormatError(str(path), [Fault("$", f"{where}duplicate key {event.value!r} (YAML would keep the last)")])
    keys.add(key)


def _looks_like_a_path(ref: str) -> bool:
    return "/" in ref or os.sep in ref or ref.endswith((".yaml", ".yml"))


def _scenario_file(ref: str | Path) -> Path:
    """The file `ref` names: a shipped scenario by name, else a path. FormatError says why there is none to read:
    an unknown name (with the known ones), a path that does not exist, a folder, not a regular file, or the OS's
    reason it cannot be looked at."""
    text = str(ref)
    if not _looks_like_a_path(text):
        shipped = SCENARIOS_DIR / f"{text}.yaml"
        if shipped.is_file():
            return shipped
        # A bare name that is no scenario but is there on disk (`-s somedir`) is read as the path it is.
        if not text.strip() or not os.path.lexists(text):
            known = ", ".join(s.name for s in list_scenarios())
            raise FormatError(text, [Fault("$", f"no such scenario (known: {known})")])
    path = Path(ref)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise FormatError(text, [Fault("$", f"scenario file {text} does not exist")]) from None
    except OSError as exc:
        raise FormatError(text, [Fault("$", f"cannot read scenario file {text}: {exc.strerror or exc}")]) from None
    if stat.S_ISDIR(mode):
        raise FormatError(text, [Fault("$", f"{text} is a folder, not a scenario file")])
    if not stat.S_ISREG(mode):  # a FIFO or a device would block the read or never end
        raise FormatError(
            text, [Fault("$", f"{text} is not a regular file (a FIFO, device or socket), not a scenario file")]
        )
    return path


def load_scenario(ref: str | Path) -> Scenario:
    """A scenario by name (from scenarios/) or by path; FormatError names every fault by JSONPath, and a file that
    is missing, a folder or unreadable by its reason."""
    path = _scenario_file(ref)
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise FormatError(str(ref), [Fault("$", f"cannot read scenario file {ref}: {exc.strerror or exc}")]) from None
    try:
        _within_budget(text, path)
        raw = yaml.safe_load(text)
    except FormatError:
        raise
    except (yaml.YAMLError, ValueError) as exc:  # ValueError: an integer past Python's 4,300 digits
        raise FormatError(str(path), [Fault("$", f"not YAML: {exc}")]) from None
    try:
        # The strict JSON reader's rules, as for every other input: no NaN or infinity, no integer past 40 digits
        # (YAML's `.nan` and 60-digit numbers load, and only the audit would refuse them, after the run).
        loads(json.dumps(raw, allow_nan=False))
    except (ValueError, TypeError) as exc:  # JsonFault, NaN/Infinity, a value JSON has no form for (a date)
        raise FormatError(str(path), [Fault("$", f"not a scenario's data: {exc}")]) from None
    validate(raw, "probe-scenario/v1", str(path))
    if "harness_profile" in raw:
        # The adapter's to give: one from the file would be played to an honest harness that does not take it,
        # and every check it changes would fail against that harness.
        raise FormatError(str(path), [Fault("$.harness_profile", "is written by harness-probe from the harness's "
                                            "adapter, never by a scenario file")])  # fmt: skip
    # `exit_code: 1.0` is the integer 1 to the schema; the proxy, reading JSON, takes only integers as such.
    data = _fill_defaults(integral_as_int(raw, "probe-scenario/v1"))
    semantic = _semantic_faults(data, path)
    if semantic:
        raise FormatError(str(path), semantic)
    return Scenario(name=data["name"], path=path, data=data, sha256=hashlib.sha256(text).hexdigest())


def list_scenarios() -> list[Scenario]:
    return [load_scenario(p) for p in sorted(SCENARIOS_DIR.glob("*.yaml"))]
