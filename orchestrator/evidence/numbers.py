"""Integral numbers read as integers where a format's schema says integer: 429.0 and 4.29E2 are the integer 429.

JSON has one number type, and JSON Schema 2020-12 counts any number with a zero fraction as an integer, so a
rollout whose status code is written `4.29E2` is valid. Python reads that text as the float 429.0, which every
check testing for an int would refuse: the document would pass its schema and fail the checks. The readers of
the rollout and the witness therefore turn such floats into ints, only at the places the schema types `integer`
(found in the schema itself, never listed by hand); a number with a fraction stays a float, invalid for both.
"""

from __future__ import annotations

from functools import cache
from itertools import chain, repeat
from typing import Any

from orchestrator.evidence.validate import schema_tree

__all__ = ["integral_as_int"]

# A node of the schema's integer positions: property name (or ITEMS for an array's entries) -> subtree, and
# LEAF when the value at this position may be an integer.
ITEMS = "[]"
LEAF = ""
Tree = dict[str, Any]


def _types(node: dict[str, Any]) -> set[str]:
    kind = node.get("type")
    return {kind} if isinstance(kind, str) else set(kind) if isinstance(kind, list) else set()


def _merge(into: Tree, other: Tree) -> None:
    for key, sub in other.items():
        if key == LEAF:
            into[LEAF] = True
        else:
            _merge(into.setdefault(key, {}), sub)


def _positions(node: Any, depth: int = 0) -> Tree:
    """The integer positions under one (inlined) schema node: its properties, items and every branch of it."""
    tree: Tree = {}
    if not isinstance(node, dict) or depth > 40:
        return tree
    if "integer" in _types(node):
        tree[LEAF] = True
    for name, sub in (node.get("properties") or {}).items():
        found = _positions(sub, depth + 1)
        if found:
            _merge(tree.setdefault(name, {}), found)
    items = _positions(node.get("items"), depth + 1)
    if items:
        _merge(tree.setdefault(ITEMS, {}), items)
    # A value valid against one branch of a oneOf (a witness event of one kind) has that branch's positions; a
    # union of them is only more places looked at, each still typed integer by some branch.
    for key in ("oneOf", "anyOf", "allOf"):
        for branch in node.get(key) or []:
            _merge(tree, _positions(branch, depth + 1))
    return tree


@cache
def _tree(fmt: str, pointer: str) -> Tree:
    return _positions(schema_tree(fmt, pointer))


def integral_as_int(instance: Any, fmt: str, pointer: str = "") -> Any:
    """`instance` (one document of `fmt`, or a list of them for a JSON Lines format; or of its part at `pointer`)
    with every integral float at an integer position of the schema made an int, in place; returned for convenience.

    A field at a time over all the records holding it, read in C: a 100,000-call rollout costs a few column passes,
    and only a column that holds a float is walked in Python."""
    holders = instance if isinstance(instance, list) else [instance]
    _fix(holders, _tree(fmt, pointer))
    return instance


def _fix(holders: list[Any], tree: Tree) -> None:
    if set(map(type, holders)) != {dict}:
        holders = [h for h in holders if type(h) is dict]
        if not holders:
            return
    for key, sub in tree.items():
        if key in (LEAF, ITEMS):
            continue  # the holders themselves are typed by the level above
        column = list(map(dict.get, holders, repeat(key)))
        if sub.get(LEAF) and float in set(map(type, column)):
            for holder, value in zip(holders, column, strict=True):
                if type(value) is float and value.is_integer():
                    holder[key] = value = int(value)
        rest = {k: v for k, v in sub.items() if k != LEAF}
        if not rest:
            continue
        if ITEMS in rest:
            lists = [v for v in column if type(v) is list]
            if lists:
                entries = list(chain.from_iterable(lists))
                items = rest[ITEMS]
                if items.get(LEAF) and float in set(map(type, entries)):
                    for lst in lists:
                        lst[:] = [int(v) if type(v) is float and v.is_integer() else v for v in lst]
                    entries = list(chain.from_iterable(lists))
                _fix(entries, {k: v for k, v in items.items() if k != LEAF})
        named = {k: v for k, v in rest.items() if k != ITEMS}
        if named:
            _fix(column, named)
