"""A fast, exact pre-check for large files: a JSON Schema subset compiled to closures, jsonschema kept as the judge.

Each compiled node answers True (valid), False (invalid) or None (a keyword it does not know). Callers accept an
instance on True only and hand everything else to jsonschema, which names the faults: so the pre-check can make
validation faster but never more lenient. Both True and False must be exact, since `oneOf` decides with them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

__all__ = ["compile_schema"]

Check = Callable[[Any], bool | None]

# Annotations: no effect on validity (format is not asserted by Draft202012Validator without a format checker).
_IGNORED = frozenset({"description", "title", "$comment", "$id", "$schema", "$defs", "default", "examples", "format"})
# Exact Python types json.loads produces -> the JSON Schema types they satisfy. A value of any other Python type
# (a subclass, a tuple) is not decided here.
_JSON_TYPES: dict[type, frozenset[str]] = {
    type(None): frozenset({"null"}),
    bool: frozenset({"boolean"}),
    str: frozenset({"string"}),
    dict: frozenset({"object"}),
    list: frozenset({"array"}),
    int: frozenset({"integer", "number"}),
    float: frozenset({"number"}),
}
_KNOWN_TYPES = frozenset().union(*_JSON_TYPES.values())


def _unknown(_: Any) -> bool | None:
    return None


def _scalar_equal(const: Any) -> Check | None:
    """Exact JSON equality for scalar constants (jsonschema tells booleans from numbers); None for others."""
    if isinstance(const, bool) or const is None:
        return lambda x: x is const
    if isinstance(const, str):
        return lambda x: isinstance(x, str) and x == const
    if isinstance(const, int | float):
        return lambda x: isinstance(x, int | float) and not isinstance(x, bool) and x == const
    return None


def _all(checks: list[Check]) -> Check:
    if not checks:
        return lambda _: True
    if len(checks) == 1:
        return checks[0]
    items = tuple(checks)

    def run(x: Any) -> bool | None:
        unsure = False
        for c in items:
            r = c(x)
            if r is False:
                return False
            if r is None:
                unsure = True
        return None if unsure else True

    return run


def _type(names: Any) -> Check:
    allowed = frozenset([names] if isinstance(names, str) else names)
    if not allowed <= _KNOWN_TYPES:
        return _unknown
    # Python types whose every value satisfies `allowed`; a float satisfies "integer" only when integral.
    yes = frozenset(t for t, kinds in _JSON_TYPES.items() if kinds & allowed)
    integral_float = "integer" in allowed and "number" not in allowed

    def run(x: Any) -> bool | None:
        t = type(x)
        if t in yes:
            return True
        if t not in _JSON_TYPES:
            return None
        return integral_float and t is float and x.is_integer()

    return run


def _object(node: dict[str, Any]) -> Check:
    props = {k: compile_schema(v) for k, v in node.get("properties", {}).items()}
    required = list(node.get("required", []))
    extra = node.get("additionalProperties", True)
    extra_check = None if isinstance(extra, bool) else compile_schema(extra)

    def run(x: Any) -> bool | None:
        if not isinstance(x, dict):
            return True  # these keywords apply to objects only
        for key in required:
            if key not in x:
                return False
        unsure = False
        for key, value in x.items():
            c = props.get(key)
            if c is None:
                if extra is False:
                    return False
                if extra_check is None:
                    continue
                c = extra_check
            r = c(value)
            if r is False:
                return False
            if r is None:
                unsure = True
        return None if unsure else True

    return run


def _one_of(branches: list[Check]) -> Check:
    def run(x: Any) -> bool | None:
        answers = [b(x) for b in branches]
        if None in answers:
            return None
        return answers.count(True) == 1

    return run


def _enum(values: list[Any]) -> Check:
    equals = [_scalar_equal(v) for v in values]
    if any(e is None for e in equals):
        return _unknown
    tests = [e for e in equals if e is not None]
    return lambda x: any(t(x) for t in tests)


def _items(schema: Any) -> Check:
    if not isinstance(schema, dict | bool):
        return _unknown
    item = compile_schema(schema)

    def run(x: Any) -> bool | None:
        if not isinstance(x, list):
            return True
        return _combine(item(v) for v in x)

    return run


def _combine(answers: Any) -> bool | None:
    unsure = False
    for r in answers:
        if r is False:
            return False
        if r is None:
            unsure = True
    return None if unsure else True


def _pattern(rx: re.Pattern[str]) -> Check:
    def run(x: Any) -> bool | None:
        return not isinstance(x, str) or rx.search(x) is not None

    return run


def _minimum(m: float) -> Check:
    def run(x: Any) -> bool | None:
        return not isinstance(x, int | float) or isinstance(x, bool) or x >= m

    return run


def _exclusive_minimum(m: float) -> Check:
    def run(x: Any) -> bool | None:
        return not isinstance(x, int | float) or isinstance(x, bool) or x > m

    return run


def _length(bound: int, at_least: bool) -> Check:
    # JSON Schema counts code points, which is what len() of a Python str counts.
    def run(x: Any) -> bool | None:
        if not isinstance(x, str):
            return True
        return len(x) >= bound if at_least else len(x) <= bound

    return run


def _count(bound: int, at_least: bool) -> Check:
    def run(x: Any) -> bool | None:
        if not isinstance(x, list):
            return True
        return len(x) >= bound if at_least else len(x) <= bound

    return run


def _maximum(m: float) -> Check:
    def run(x: Any) -> bool | None:
        return not isinstance(x, int | float) or isinstance(x, bool) or x <= m

    return run


def _not(inner: Check) -> Check:
    def run(x: Any) -> bool | None:
        r = inner(x)
        return None if r is None else not r

    return run


def _if(cond: Check, then: Any, otherwise: Any) -> Check:
    then_check, else_check = compile_schema(then), compile_schema(otherwise)

    def run(x: Any) -> bool | None:
        r = cond(x)
        if r is None:
            return None
        return then_check(x) if r else else_check(x)

    return run


def _node(node: dict[str, Any]) -> Check:
    checks: list[Check] = []
    object_keys = {"properties", "required", "additionalProperties"}
    for key, value in node.items():
        if key in _IGNORED or key in object_keys:
            continue
        if key == "type":
            checks.append(_type(value))
        elif key == "const":
            eq = _scalar_equal(value)
            checks.append(eq or _unknown)
        elif key == "enum" and isinstance(value, list):
            checks.append(_enum(value))
        elif key == "oneOf" and isinstance(value, list):
            checks.append(_one_of([compile_schema(b) for b in value]))
        elif key == "items":
            checks.append(_items(value))
        elif key == "pattern" and isinstance(value, str):
            checks.append(_pattern(re.compile(value)))
        elif key == "minimum" and isinstance(value, int | float):
            checks.append(_minimum(value))
        elif key == "exclusiveMinimum" and isinstance(value, int | float) and not isinstance(value, bool):
            checks.append(_exclusive_minimum(value))
        elif key in ("minLength", "maxLength") and isinstance(value, int) and not isinstance(value, bool):
            checks.append(_length(value, key == "minLength"))
        elif key in ("minItems", "maxItems") and isinstance(value, int) and not isinstance(value, bool):
            checks.append(_count(value, key == "minItems"))
        elif key == "maximum" and isinstance(value, int | float) and not isinstance(value, bool):
            checks.append(_maximum(value))
        elif key == "allOf" and isinstance(value, list):
            checks.append(_all([compile_schema(b) for b in value]))
        elif key == "not":
            checks.append(_not(compile_schema(value)))
        elif key == "if":
            checks.append(_if(compile_schema(value), node.get("then", True), node.get("else", True)))
        elif key in ("then", "else") and "if" in node:
            continue  # part of `if`
        else:  # a keyword this subset does not implement: let jsonschema decide
            checks.append(_unknown)
    if object_keys & node.keys():
        checks.append(_object(node))
    return _all(checks)


def compile_schema(schema: Any) -> Check:
    """A tri-state checker for an inlined schema (no `$ref` left); True/False exact, None when unsure."""
    if schema is True:
        return lambda _: True
    if schema is False:
        return lambda _: False
    if not isinstance(schema, dict) or "$ref" in schema:
        return _unknown
    return _node(schema)
