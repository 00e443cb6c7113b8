"""Validation of every file format we read or write against its JSON Schema, with faults named by JSONPath."""

from __future__ import annotations

import gc
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema_rs
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from orchestrator.errors import BadFile
from orchestrator.evidence.jsonread import JsonFault, read_json
from orchestrator.evidence.text import CUT, bounded
from orchestrator.resources import scenario_schema_path, schemas_dir

SCHEMA_DIR = schemas_dir()
SCENARIO_SCHEMA = scenario_schema_path()

__all__ = [
    "FAULT_CHARS",
    "Fault",
    "FormatError",
    "envelope_faults",
    "faults",
    "fragment_batch_precheck",
    "fragment_faults",
    "fragment_precheck",
    "holds_tuple",
    "load_json",
    "schema_path",
    "schema_tree",
    "validate",
]


# What a fault may say of its value. jsonschema's messages quote the whole instance (`[...] is too long`, `'...' is
# not of type 'integer'`): a 10 MB value in a saved file made a 10 MB message in every report and error naming it.
FAULT_CHARS = 400
_PREFIX = 64  # what a reader may put before a fault's path: `line 123456: `


@dataclass(frozen=True)
class Fault:
    path: str  # JSONPath of the offending value, `$` for the root
    message: str

    def __post_init__(self) -> None:
        # Both may quote what a file holds (a key in the path, the value in the message): bounded once, here. A text
        # cut already and then given a short prefix (`line 12: ` before a path) keeps its one cut and its count.
        for name in ("path", "message"):
            text = getattr(self, name)
            if not (CUT in text and len(text) <= FAULT_CHARS + _PREFIX):
                object.__setattr__(self, name, bounded(text, FAULT_CHARS))

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class FormatError(BadFile):
    """A file does not match its format; `faults` says where, one JSONPath each."""

    def __init__(self, what: str, fault_list: list[Fault]) -> None:
        self.what = what
        self.faults = fault_list
        shown = "\n".join(f"  {f}" for f in fault_list[:20])
        more = f"\n  ... and {len(fault_list) - 20} more" if len(fault_list) > 20 else ""
        super().__init__(f"{what} is not valid:\n{shown}{more}")


def schema_path(fmt: str) -> Path:
    """`probe-rollout/v1` -> its schema file."""
    if fmt == "probe-scenario/v1":
        return SCENARIO_SCHEMA
    name, _, version = fmt.partition("/")
    path = SCHEMA_DIR / f"{name}.{version}.json"
    if not path.is_file():
        raise KeyError(f"no schema for format {fmt!r}")
    return path


@cache
def _schema(fmt: str) -> dict[str, Any]:
    # Every format's schema is a file shipped with the package: each is checked against the 2020-12 meta-schema by
    # a unit test (test_resources), not again in every process (a third of a second for seven schemas).
    schema: dict[str, Any] = json.loads(schema_path(fmt).read_text())
    return schema


@cache
def schema_tree(fmt: str, pointer: str = "") -> dict[str, Any]:
    """The format's schema (or its part at `pointer`) with local `$ref`s resolved in place (shared: do not modify)."""
    schema = _schema(fmt)
    inlined: dict[str, Any] = _inline(_resolve(schema, pointer), schema)
    return inlined


def _inline(node: Any, root: dict[str, Any], depth: int = 0) -> Any:
    # Our schemas use local, non-recursive `$ref`s only. Resolving them once, before validation, spares the
    # validator a reference lookup per value: it is what makes a 400,000-line witness validate in seconds.
    if depth > 50:
        raise ValueError("schema $ref nesting too deep (recursive schemas are not inlined)")
    if isinstance(node, list):
        return [_inline(x, root, depth) for x in node]
    if not isinstance(node, dict):
        return node
    if isinstance(node.get("$ref"), str) and node["$ref"].startswith("#"):
        target = _resolve(root, node["$ref"][1:])
        rest = {k: v for k, v in node.items() if k != "$ref"}
        merged = {**_inline(target, root, depth + 1), **_inline(rest, root, depth)}
        return merged
    return {
        k: (_inline(v, root, depth) if k not in ("$defs", "const", "default", "enum") else v) for k, v in node.items()
    }


def _resolve(root: dict[str, Any], pointer: str) -> Any:
    node: Any = root
    for part in pointer.lstrip("/").split("/") if pointer else []:
        node = node[int(part)] if isinstance(node, list) else node[part.replace("~1", "/").replace("~0", "~")]
    return node


@cache
def _validator(fmt: str) -> Draft202012Validator:
    # Built once per format and reused: validating thousands of files must not re-compile schemas.
    schema = _schema(fmt)
    return Draft202012Validator(_inline(schema, schema))


@cache
def _fragment_validator(fmt: str, pointer: str) -> Draft202012Validator:
    # A validator for one part of a format (e.g. `/$defs/model_call/properties/token_stats`), so a check can
    # judge its own field while a malformed neighbour fails only the neighbour's check.
    schema = _schema(fmt)
    return Draft202012Validator(_inline(_resolve(schema, pointer), schema))


def holds_tuple(instance: Any) -> bool:
    """Whether a tuple is anywhere in `instance`: the one Python value jsonschema_rs reads as JSON and jsonschema
    does not (an array to one, not to the other). Values read from JSON text never hold one.

    Walked a level at a time by the collector's own traversal, in C: a 100,000-call rollout is millions of values.
    A value that is not JSON's (an object of a class) reaches its type, whose bases are a tuple: True, so the
    pre-check does not decide and jsonschema judges, as for a tuple.
    """
    level = [instance]
    while level:
        if any(issubclass(kind, tuple) for kind in set(map(type, level))):
            return True
        level = gc.get_referents(*level)
    return False


def _compiled(schema: Any) -> Callable[..., bool]:
    # Formats are annotations here as in jsonschema without a format checker (the `jsonschema` library is the
    # judge of every format); patterns are Rust regexes, never more lenient than Python's on our schemas (`$`
    # does not match before a trailing newline, `\d` is ASCII): tests/unit/checks/test_precheck.py.
    try:
        validator = jsonschema_rs.Draft202012Validator(schema, validate_formats=False)
    except ValueError:  # a schema it cannot compile (a regex Rust has no syntax for): jsonschema judges alone
        return lambda instance, parsed=False: False

    def accepts(instance: Any, parsed: bool = False) -> bool:
        try:
            valid = validator.is_valid(instance)
        except (ValueError, TypeError, OverflowError, RecursionError):  # not JSON to it: a lone surrogate, an int key
            return False
        return valid and (parsed or not holds_tuple(instance))

    return accepts


@cache
def fragment_batch_precheck(fmt: str, pointer: str) -> Callable[[list[Any]], bool]:
    """The pre-check of a list of values read from JSON text, each against the fragment, in one call: True means
    every one is valid; False, judge them one by one (fragment_precheck, fragment_faults)."""
    schema = _schema(fmt)
    accepts = _compiled({"type": "array", "items": _inline(_resolve(schema, pointer), schema)})
    return lambda values: accepts(values, True)


@cache
def fragment_precheck(fmt: str, pointer: str) -> Callable[..., bool]:
    """A fast exact pre-check of the same fragment: True means valid; False, ask `fragment_faults`."""
    schema = _schema(fmt)
    return _compiled(_inline(_resolve(schema, pointer), schema))


@cache
def _envelope(fmt: str, elsewhere: frozenset[str], typed: frozenset[str]) -> tuple[Any, Draft202012Validator]:
    schema = schema_tree(fmt)
    props = {
        k: {} if k in elsewhere else {kw: v for kw, v in sub.items() if not (k in typed and kw in ("type", "const"))}
        for k, sub in schema["properties"].items()
    }
    top = {kw: v for kw, v in schema.items() if kw not in ("$defs", "properties", "required")}
    top["properties"] = props
    top["required"] = [k for k in schema.get("required", []) if k not in typed]
    return _compiled(top), Draft202012Validator(top)


def envelope_faults(
    instance: dict[str, Any], fmt: str, elsewhere: frozenset[str], typed: frozenset[str], *, parsed: bool = False
) -> list[Fault]:
    """Faults of a document's top level against its schema: the keys it must and may have and the values of those
    no other judge reads. `elsewhere`: top-level keys whose values are judged elsewhere (left out); `typed`: keys
    whose presence and type the caller judges itself (only their contents are judged here).

    The values judged elsewhere are not even handed to the validator: a 100,000-call array is no part of this."""
    accepts, validator = _envelope(fmt, elsewhere, typed)
    view = {
        k: ({} if isinstance(v, dict) else [] if isinstance(v, list) else v) if k in elsewhere else v
        for k, v in instance.items()
    }
    if accepts(view, parsed):
        return []
    found = [Fault(_jsonpath(e), e.message) for err in validator.iter_errors(view) for e in _best(err)]
    return sorted(set(found), key=lambda f: (f.path, f.message))


def fragment_faults(instance: Any, fmt: str, pointer: str, at: str, *, parsed: bool = False) -> list[Fault]:
    """Faults of `instance` against the subschema at `pointer`, with paths prefixed by `at` (its JSONPath).

    `parsed` says the instance was just read from JSON text (it holds JSON types only), sparing a look for tuples.
    """
    # The pre-check (jsonschema_rs) accepts a valid instance at a fraction of jsonschema's cost (large witnesses
    # and rollouts); whatever it does not accept, jsonschema judges and names.
    if fragment_precheck(fmt, pointer)(instance, parsed):
        return []
    found = []
    for err in _fragment_validator(fmt, pointer).iter_errors(instance):
        for e in _best(err):
            found.append(Fault(at + _jsonpath(e)[1:], e.message))
    return sorted(set(found), key=lambda f: (f.path, f.message))


def _jsonpath(err: ValidationError) -> str:
    out = "$"
    for part in err.absolute_path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _best(err: ValidationError) -> list[ValidationError]:
    # oneOf failures hide the useful message in their context: report the deepest branch errors instead.
    if err.validator in ("oneOf", "anyOf") and err.context:
        deepest = max(len(e.absolute_path) for e in err.context)
        if deepest > len(err.absolute_path):
            return [e for e in err.context if len(e.absolute_path) == deepest]
    return [err]


@cache
def _precheck(fmt: str) -> Callable[..., bool]:
    schema = _schema(fmt)
    return _compiled(_inline(schema, schema))


def faults(instance: Any, fmt: str, *, parsed: bool = False) -> list[Fault]:
    if _precheck(fmt)(instance, parsed):
        return []
    found: list[Fault] = []
    for err in _validator(fmt).iter_errors(instance):
        for e in _best(err):
            found.append(Fault(_jsonpath(e), e.message))
    return sorted(set(found), key=lambda f: (f.path, f.message))


def validate(instance: Any, fmt: str, what: str | None = None, *, parsed: bool = False) -> None:
    found = faults(instance, fmt, parsed=parsed)
    if found:
        raise FormatError(what or fmt, found)


def load_json(path: Path, fmt: str) -> Any:
    """Read and validate a JSON file; a parse error is a FormatError too, never a traceback."""
    try:
        data = read_json(path)
    except FileNotFoundError:
        raise FormatError(str(path), [Fault("$", "file does not exist")]) from None
    except JsonFault as exc:
        raise FormatError(str(path), [Fault("$", str(exc))]) from None
    validate(data, fmt, str(path), parsed=True)
    return data
