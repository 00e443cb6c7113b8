"""Evidence held compactly in memory: the records of one kind share one key table, and a string read again is held
once."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from itertools import chain, compress, islice, repeat
from operator import is_not, le
from typing import Any

__all__ = ["Held", "hold_rollout"]

_TEXT = frozenset({str, type(None)})
# Keys whose values are never alike: times, written to the millisecond or microsecond (a witness has one per event),
# and the witness's marker path, token and request hash of each call. Looking each up in the table of strings held
# would cost a pass and hold nothing once.
_DISTINCT = frozenset({"at", "started_at", "completed_at", "timestamp", "marker_path", "token", "request_sha256"})
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
    It is still a `dict` to every reader (indexing, `get`, equality, `json`); one a check changes may become an
    ordinary dict, as correct and only as large as before. A class is made for a kind the caller names and the keys
    of its first record, and kept for the process, at most MAX_LAYOUTS_PER_KIND a kind; a record with a key its class
    lacks is left as it was read. Each string value is held once: the ids, commands and outputs a rollout and its
    witness repeat three to six times each.
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
        # Only a record whose keys are all its class's: a key the class has not seen would join its key table, which
        # lives as long as the process (a hostile rollout could keep megabytes of keys that way). Any other record, or
        # one of a layout past the bounds, is held as it was read.
        fits = list(map(le, map(dict.keys, records), map(_keys_of, classes)))
        held = [c().__dict__ if f and c is not None else r for c, f, r in zip(classes, fits, records, strict=True)]
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

    def records(self, kind: str, values: list[Any]) -> None:
        """Each dict of the list `values`, held in place (anything else is left as it is)."""
        for start in range(0, len(values), _CHUNK):
            chunk = values[start : start + _CHUNK]
            if set(map(type, chunk)) == {dict}:
                values[start : start + _CHUNK] = self.hold([kind] * len(chunk), chunk)
            else:
                self.at(kind, [(values, start + i) for i, v in enumerate(chunk) if type(v) is dict])

    def at(self, kind: str, slots: list[tuple[Any, Any]]) -> None:
        """Hold the dict at each (container, key or index) in place, in chunks."""
        for start in range(0, len(slots), _CHUNK):
            chunk = slots[start : start + _CHUNK]
            values = [c[k] for c, k in chunk]
            for (container, key), value in zip(chunk, self.hold([kind] * len(values), values), strict=True):
                container[key] = value


# Layouts (a kind and its first record's keys) a process has made a class for: a class lives as long as the
# process (freed per episode, an audit of 10,000 episodes grew by the classes it left for the collector). Bounded per
# kind, as the keys are the harness's: past the bounds a kind's records are left as ordinary dicts, and hostile
# rollouts that use up one kind's layouts leave the others (the witness's, whose keys its schema fixes) as they were.
_LAYOUTS: dict[tuple[str, tuple[str, ...]], type] = {}
_PER_KIND: dict[str, int] = {}
MAX_LAYOUTS_PER_KIND = 64
MAX_KEYS = 30  # CPython shares at most 30 keys a class
MAX_KEY_CHARS = 64
_NO_KEYS: frozenset[str] = frozenset()


def _keys_of(cls: type | None) -> frozenset[str]:
    return _NO_KEYS if cls is None else cls.held_keys  # type: ignore[attr-defined]


def _layout(kind: str, first: dict[str, Any]) -> type | None:
    keys = tuple(first)
    layout = (kind, keys)
    cls = _LAYOUTS.get(layout)
    if cls is not None:
        return cls
    if (
        _PER_KIND.get(kind, 0) >= MAX_LAYOUTS_PER_KIND
        or not keys
        or len(keys) > MAX_KEYS
        or any(type(k) is not str or len(k) > MAX_KEY_CHARS for k in keys)  # a dict built in Python may hold others
    ):
        return None
    _PER_KIND[kind] = _PER_KIND.get(kind, 0) + 1
    cls = _LAYOUTS[layout] = type(f"Held_{len(_LAYOUTS)}", (), {})
    # The class's key table grows with the first dict given keys: dicts made before it holds them would have no room
    # for their values and become ordinary dicts, so one is filled first. The keys are set on the class after it, so
    # they are never one of its instances' keys.
    cls().__dict__.update(first)
    cls.held_keys = frozenset(keys)  # type: ignore[attr-defined]
    return cls


# Inner objects before the records holding them: a record held first would keep the plain ones its copy of their
# reference points to.
_ROLLOUT_ORDER = ("token_stats", "arguments", "message.tool_calls", "message", "model_calls", "steps", "tool_calls")


def hold_rollout(rollout: Mapping[str, object], held: Held) -> None:
    """The rollout's many records (model calls, steps, tool records, history messages and the calls they hold),
    held compactly in place; its shape and values are unchanged. A long list is held in place a chunk at a time;
    records of one kind in short lists are gathered across them a chunk at a time (a history of 400,000 messages of
    one call each is a few thousand passes, not 400,000)."""
    slots: dict[str, list[tuple[Any, Any]]] = {kind: [] for kind in _ROLLOUT_ORDER}
    lists: dict[str, list[list[Any]]] = {kind: [] for kind in _ROLLOUT_ORDER}

    def flush() -> None:
        for kind in _ROLLOUT_ORDER:
            held.at(kind, slots[kind])
            slots[kind] = []

    def gathered(kind: str, found: list[tuple[Any, Any]]) -> None:
        slots[kind] += found
        if len(slots[kind]) >= _CHUNK:
            flush()

    def take(kind: str, values: Any) -> None:
        if type(values) is not list:
            return
        if len(values) >= _CHUNK // 4:
            lists[kind].append(values)
        else:
            gathered(kind, [(values, i) for i, v in enumerate(values) if type(v) is dict])

    def inner(kind: str, records: list[Any], key: str) -> None:
        gathered(kind, [(r, key) for r in records if type(r) is dict and type(r.get(key)) is dict])

    for key, nested in (("model_calls", "token_stats"), ("tool_calls", "arguments")):
        records = _list(rollout.get(key))
        for start in range(0, len(records), _CHUNK):
            inner(nested, records[start : start + _CHUNK], nested)
    for key in ("model_calls", "steps", "tool_calls"):
        take(key, rollout.get(key))
    for inv in _list(rollout.get("invocations")):
        history = inv.get("conversation") if type(inv) is dict else None
        take("message", history)
        for message in _list(history):
            calls = message.get("tool_calls") if type(message) is dict else None
            if type(calls) is list:
                inner("arguments", calls, "arguments")
                take("message.tool_calls", calls)
    flush()
    for kind in _ROLLOUT_ORDER:
        for values in lists[kind]:
            held.records(kind, values)


def _list(value: Any) -> list[Any]:
    return value if type(value) is list else []
