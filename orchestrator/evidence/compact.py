"""Evidence held compactly in memory: the records of one kind share one key table, and a short string read again is
held once."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from itertools import chain, compress, islice, repeat
from operator import is_not
from typing import Any

__all__ = ["Held", "hold_rollout"]

_TEXT = frozenset({str, type(None)})
# Keys whose values are times, written to the millisecond or microsecond: no two alike, so looking each up in the
# table of strings held would cost a pass and hold nothing once (a witness has one per event).
_DISTINCT = frozenset({"at", "started_at", "completed_at", "timestamp"})
# Records held together: each pass over them finds them still in the CPU's caches, and the plain ones' memory is
# taken again by the next chunk.
_CHUNK = 256


class _Absent:
    """What a record without the key gives (a value no JSON reading makes)."""


_ABSENT = _Absent()


class Held:
    """What one episode's evidence has already put in memory, to hold the rest as compactly.

    A record becomes the `__dict__` of an instance of its kind's class: CPython keeps the keys of such dicts once for
    the class (a split table) and only the values per record, so an attempt's 27 keys take 288 bytes, not 1,168.
    It is still a `dict` to every reader (indexing, `get`, equality, `json`); a record whose keys come in another
    order, or one a check changes, becomes an ordinary dict, as correct and only as large as before. A class is made
    for a kind the caller names and the keys of its first record, and kept for the process, at most MAX_LAYOUTS of
    them. Each string value is held once: the ids, commands and outputs a rollout and its witness repeat three to
    six times each.
    """

    def __init__(self) -> None:
        self._kinds: dict[str, type | None] = {}
        self._strings: dict[str | None, str | None] = {}

    def _class(self, kind: str, first: dict[str, Any]) -> type | None:
        if kind in self._kinds:
            return self._kinds[kind]
        cls = self._kinds[kind] = _layout(kind, first)
        return cls

    def hold(self, kinds: list[str], records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The records (dicts, kinds[i] naming the kind of records[i]), each as a held dict of its kind.

        Done a column at a time (map, not a Python step per value): 100,000 records are held in a few tenths of a
        second."""
        classes = list(map(self._class, kinds, records))
        if None in classes:  # a layout past the bounds: those records are held as they were read
            held = [r if c is None else c().__dict__ for c, r in zip(classes, records, strict=True)]
        else:
            held = [c().__dict__ for c in classes]  # type: ignore[misc]  # None is not among them
        deque(map(dict.update, held, records), 0)
        strings = self._strings
        one = len(set(kinds)) == 1
        for kind in set(kinds):
            group = held if one else list(compress(held, map(kind.__eq__, kinds)))
            # The keys in the order they first appear (a user, an assistant and a tool message differ), the first
            # MAX_KEYS of them: a hostile file's 100,000 keys would each cost a pass over the group.
            for key in islice(dict.fromkeys(chain.from_iterable(group)), MAX_KEYS):
                if key in _DISTINCT:
                    continue
                owners = group
                column = list(map(dict.get, group, repeat(key), repeat(_ABSENT)))
                types = set(map(type, column))
                if _Absent in types:  # records without the key: only those with it, never given it
                    types.discard(_Absent)
                    owners = list(compress(group, map(is_not, column, repeat(_ABSENT))))
                    column = list(map(dict.__getitem__, owners, repeat(key)))
                # Strings (and nulls) only: 1, 1.0 and True are equal keys, and one must never stand for another.
                if types <= _TEXT:
                    deque(map(dict.__setitem__, owners, repeat(key), map(strings.setdefault, column, column)), 0)
        return held

    def records(self, kind: str, values: Any) -> None:
        """Each dict of the list `values`, held in place (anything else is left as it is)."""
        if type(values) is not list:
            return
        for start in range(0, len(values), _CHUNK):
            chunk = values[start : start + _CHUNK]
            if set(map(type, chunk)) == {dict}:
                values[start : start + _CHUNK] = self.hold([kind] * len(chunk), chunk)
            else:
                at = [i for i, v in enumerate(chunk) if type(v) is dict]
                for i, h in zip(at, self.hold([kind] * len(at), [chunk[i] for i in at]) if at else [], strict=True):
                    values[start + i] = h

    def nested(self, records: list[Any], key: str, kind: str) -> None:
        """The object under `key` of each record, held in place (anything else is left as it is)."""
        for start in range(0, len(records), _CHUNK):
            owners = [r for r in records[start : start + _CHUNK] if type(r) is dict and type(r.get(key)) is dict]
            if owners:
                held = self.hold([kind] * len(owners), [r[key] for r in owners])
                deque(map(dict.__setitem__, owners, repeat(key), held), 0)


# Layouts (a kind and its first record's keys) a process has made a class for: a class lives as long as the
# process (freed per episode, an audit of 10,000 episodes grew by the classes it left for the collector). Bounded, as
# the keys are the harness's: past the bounds a kind's records are left as ordinary dicts.
_LAYOUTS: dict[tuple[str, tuple[str, ...]], type] = {}
MAX_LAYOUTS = 1000
MAX_KEYS = 30  # CPython shares at most 30 keys a class
MAX_KEY_CHARS = 64


def _layout(kind: str, first: dict[str, Any]) -> type | None:
    keys = tuple(first)
    layout = (kind, keys)
    cls = _LAYOUTS.get(layout)
    if cls is not None:
        return cls
    if (
        len(_LAYOUTS) >= MAX_LAYOUTS
        or len(keys) > MAX_KEYS
        or any(type(k) is not str or len(k) > MAX_KEY_CHARS for k in keys)  # a dict built in Python may hold others
    ):
        return None
    cls = _LAYOUTS[layout] = type(f"Held_{len(_LAYOUTS)}", (), {})
    # The class's key table grows with the first dict given keys: dicts made before it holds them would have no room
    # for their values and become ordinary dicts, so one is filled first.
    cls().__dict__.update(first)
    return cls


def hold_rollout(rollout: Mapping[str, object], held: Held) -> None:
    """The rollout's many records (model calls, steps, tool records, history messages and the calls they hold),
    held compactly in place; its shape and values are unchanged."""
    for key, nested in (("model_calls", "token_stats"), ("steps", None), ("tool_calls", "arguments")):
        records = rollout.get(key)
        held.records(key, records)
        if nested is not None and type(records) is list:
            held.nested(records, nested, f"{key}.{nested}")
    invocations = rollout.get("invocations")
    if type(invocations) is not list:
        return
    for inv in invocations:
        history = inv.get("conversation") if type(inv) is dict else None
        if type(history) is not list:
            continue
        held.records("message", history)
        for m in history:
            calls = m.get("tool_calls") if type(m) is dict else None
            if type(calls) is list:
                held.records("message.tool_calls", calls)
                held.nested(calls, "arguments", "message.tool_calls.arguments")
