"""Each typed record has exactly its JSON Schema's keys and required keys, nested records included, so the two
cannot drift apart."""

from __future__ import annotations

import json
import types
import typing
from pathlib import Path
from typing import Any, NotRequired, TypedDict, get_args, get_origin, is_typeddict

import pytest

from orchestrator import records
from orchestrator.records import Rollout, RuntimeRecord, ScenarioResult, Suite, Summary

SCHEMAS = Path(records.__file__).resolve().parents[1] / "evidence" / "schemas"

# Each top-level record and the schema it is written in; nested records are reached from these.
TOP = [
    (Rollout, "probe-rollout.v1.json"),
    (ScenarioResult, "scenario-result.v1.json"),
    (Suite, "suite.v1.json"),
    (Summary, "probe-summary.v1.json"),
    (RuntimeRecord, "runtime.v1.json"),
]


def _resolve(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        target: Any = root
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


def _object_nodes(node: dict[str, Any], root: dict[str, Any]) -> list[dict[str, Any]]:
    """The object schemas a value may be (an object, or one of a oneOf/anyOf's object alternatives)."""
    node = _resolve(node, root)
    alternatives = node.get("oneOf", []) + node.get("anyOf", [])
    found = [node] if "properties" in node else []
    return found + [n for alt in alternatives for n in _object_nodes(alt, root)]


def _records_in(annotation: Any, node: dict[str, Any], root: dict[str, Any]) -> list[tuple[Any, dict[str, Any]]]:
    """The TypedDicts inside one field's annotation, each with the schema node it must match."""
    node = _resolve(node, root)
    if is_typeddict(annotation):
        objects = _object_nodes(node, root)
        assert len(objects) == 1, f"{annotation.__name__}: expected one object schema, found {len(objects)}"
        return [(annotation, objects[0])]
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is list:
        return _records_in(args[0], node.get("items", {}), root)
    if origin is dict:
        extra = node.get("additionalProperties")
        return _records_in(args[1], extra, root) if isinstance(extra, dict) else []
    if origin in (types.UnionType, typing.Union):
        return [r for a in args if a is not type(None) for r in _records_in(a, node, root)]
    return []


def _pairs(record: Any, node: dict[str, Any], root: dict[str, Any]) -> list[tuple[Any, dict[str, Any]]]:
    """This record with its schema node, and every record nested in it with its own."""
    out = [(record, node)]
    hints = typing.get_type_hints(record)
    for key, annotation in hints.items():
        if key in node.get("properties", {}):
            for nested in _records_in(annotation, node["properties"][key], root):
                out += _pairs(*nested, root)
    return out


def _all_pairs() -> list[tuple[str, Any, dict[str, Any]]]:
    out = []
    for record, name in TOP:
        root = json.loads((SCHEMAS / name).read_text())
        out += [(f"{name}:{r.__name__}", r, n) for r, n in _pairs(record, root, root)]
    return out


def _mismatches(record: Any, node: dict[str, Any]) -> list[str]:
    keys, schema_keys = set(typing.get_type_hints(record)), set(node.get("properties", {}))
    required, schema_required = set(record.__required_keys__), set(node.get("required", []))
    faults = [f"key {k!r} only in the record" for k in sorted(keys - schema_keys)]
    faults += [f"key {k!r} only in the schema" for k in sorted(schema_keys - keys)]
    faults += [f"{k!r} required only in the record" for k in sorted(required - schema_required)]
    faults += [f"{k!r} required only in the schema" for k in sorted(schema_required - required)]
    return faults


PAIRS = _all_pairs()


@pytest.mark.parametrize(("name", "record", "node"), PAIRS, ids=[p[0] for p in PAIRS])
def test_record_has_its_schemas_keys_and_required_keys(name: str, record: Any, node: dict[str, Any]) -> None:
    assert _mismatches(record, node) == []


def test_every_record_is_pinned() -> None:
    """Every TypedDict the package exports is reached from a top-level record, so none escapes the pin."""
    pinned = {r for _, r, _ in PAIRS}
    exported = {getattr(records, n) for n in records.__all__ if is_typeddict(getattr(records, n))}
    assert exported - pinned == set()


def test_nested_records_are_reached() -> None:
    names = {p[0] for p in PAIRS}
    for expected in ("ModelCall", "TokenStats", "Invocation", "Message", "RequestedCall", "Step", "ToolRecord"):
        assert f"probe-rollout.v1.json:{expected}" in names
    for expected in ("Execution", "CheckRow", "Collection", "CollectionFinding", "Gate", "NormalizeRecord"):
        assert f"scenario-result.v1.json:{expected}" in names
    assert "probe-summary.v1.json:FirstFailure" in names  # through a oneOf with null
    assert "runtime.v1.json:Limits" in names  # through a $ref


# Negative controls: a key added to one side only is caught, in either direction, required or not.


def test_a_key_only_in_the_record_is_caught() -> None:
    # The functional form: this module's annotations are strings, which TypedDict cannot read NotRequired from.
    wider = TypedDict("wider", {"gap_code": str, "code": str, "detail": str, "labels": NotRequired[list[str]]})  # noqa: UP013

    node = json.loads((SCHEMAS / "probe-rollout.v1.json").read_text())["properties"]["gaps"]["items"]
    assert _mismatches(wider, node) == ["key 'gap_code' only in the record", "'gap_code' required only in the record"]


def test_a_key_only_in_the_schema_is_caught() -> None:
    node = json.loads((SCHEMAS / "probe-rollout.v1.json").read_text())["$defs"]["step"]
    node = {**node, "properties": {**node["properties"], "duration": {}}, "required": [*node["required"], "duration"]}
    assert _mismatches(records.Step, node) == [
        "key 'duration' only in the schema",
        "'duration' required only in the schema",
    ]


def test_required_on_one_side_only_is_caught() -> None:
    node = json.loads((SCHEMAS / "probe-rollout.v1.json").read_text())["$defs"]["step"]
    node = {**node, "required": [*node["required"], "token_stats"]}
    assert _mismatches(records.Step, node) == ["'token_stats' required only in the schema"]


def test_a_nested_record_is_checked_too() -> None:
    root = json.loads((SCHEMAS / "probe-rollout.v1.json").read_text())
    root["$defs"]["model_call"]["properties"]["token_stats"]["properties"]["audio"] = {}
    faults = {r.__name__: _mismatches(r, n) for r, n in _pairs(Rollout, root, root)}
    assert faults["TokenStats"] == ["key 'audio' only in the schema"]
    assert all(not f for name, f in faults.items() if name != "TokenStats")
