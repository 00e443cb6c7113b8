"""Harness options as data: each adapter lists its options once; parsing, validation and help derive from the list.

An adapter declares `options = (Choice(...), Integer(...), Flag(...), Text(...))`; `-a KEY=VALUE` strings are
checked here, once for every harness, and every bad value is a BadOption naming the harness, the option and what
it allows. `harnesses list` and `harnesses show` print the same descriptors.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from orchestrator.errors import BadOption

__all__ = ["Choice", "Flag", "Integer", "Option", "OptionValues", "Text", "parse_options"]

Kind = Literal["choice", "integer", "flag", "text"]
Value = str | int | bool | None

# ASCII digits only (str.isdigit would take "²", which int() refuses), at most a sign before them.
_INTEGER = re.compile(r"-?[0-9]{1,18}")
_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


@dataclass(frozen=True)
class Option:
    """One option: its name (the KEY of `-a KEY=VALUE`), kind, default, and what it allows.

    A default of None means unset: the harness then runs as shipped (its own default, said in `help`).
    """

    name: str
    kind: Kind
    default: Value
    help: str
    choices: tuple[str, ...] = ()
    minimum: int | None = None
    maximum: int | None = None

    def allowed(self) -> str:
        """What a value may be, as the error message and `harnesses show` print it."""
        if self.kind == "choice":
            return "one of: " + ", ".join(self.choices)
        if self.kind == "flag":
            return "true or false"
        if self.kind == "integer":
            if self.minimum is not None and self.maximum is not None:
                return f"an integer from {self.minimum} to {self.maximum}"
            if self.minimum is not None:
                named = {0: "a non-negative integer", 1: "a positive integer"}
                return named.get(self.minimum, f"an integer >= {self.minimum}")
            if self.maximum is not None:
                return f"an integer <= {self.maximum}"
            return "an integer"
        return "any text"

    def type_name(self) -> str:
        return {"choice": "choice", "integer": "int", "flag": "bool", "text": "str"}[self.kind]

    def default_text(self) -> str:
        if self.default is None:
            return "unset"
        if isinstance(self.default, bool):
            return "true" if self.default else "false"
        return str(self.default)

    def parse(self, raw: str, harness: str) -> Value:
        """The typed value of `raw`; BadOption names the harness, option, value and what is allowed."""
        if self.kind == "text":
            return raw
        if self.kind == "choice":
            if raw in self.choices:
                return raw
        elif self.kind == "flag":
            word = raw.strip().lower()
            if word in _TRUE or word in _FALSE:
                return word in _TRUE
        elif _INTEGER.fullmatch(raw):
            number = int(raw)
            low_ok = self.minimum is None or number >= self.minimum
            high_ok = self.maximum is None or number <= self.maximum
            if low_ok and high_ok:
                return number
        raise BadOption(f"harness {harness!r}: option {self.name}={raw!r} is not {self.allowed()}")


def Choice(name: str, choices: Sequence[str], default: str, help: str) -> Option:
    if default not in choices:
        raise ValueError(f"option {name}: default {default!r} is not among its choices")
    return Option(name, "choice", default, help, choices=tuple(choices))


def Integer(
    name: str, default: int | None, help: str, *, minimum: int | None = None, maximum: int | None = None
) -> Option:
    return Option(name, "integer", default, help, minimum=minimum, maximum=maximum)


def Flag(name: str, default: bool, help: str) -> Option:
    return Option(name, "flag", default, help)


def Text(name: str, default: str | None, help: str) -> Option:
    return Option(name, "text", default, help)


class OptionValues:
    """The typed values of one harness's options: each given one parsed, each other one its default."""

    def __init__(self, values: Mapping[str, Value]) -> None:
        self._values = dict(values)

    def __contains__(self, name: object) -> bool:
        return name in self._values

    def as_dict(self) -> dict[str, Value]:
        return dict(self._values)

    def text(self, name: str) -> str:
        value = self._values[name]
        if not isinstance(value, str):
            raise TypeError(f"option {name} is not text")
        return value

    def optional_text(self, name: str) -> str | None:
        value = self._values[name]
        return value if isinstance(value, str) else None

    def integer(self, name: str) -> int:
        value = self._values[name]
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"option {name} is not an integer")
        return value

    def optional_integer(self, name: str) -> int | None:
        value = self._values[name]
        return None if value is None else self.integer(name)

    def flag(self, name: str) -> bool:
        value = self._values[name]
        if not isinstance(value, bool):
            raise TypeError(f"option {name} is not a flag")
        return value


def parse_options(harness: str, declared: Sequence[Option], given: Mapping[str, str]) -> OptionValues:
    """`-a KEY=VALUE` strings -> typed values; an unknown key or bad value is a BadOption listing what is allowed."""
    known = {o.name: o for o in declared}
    unknown = sorted(set(given) - set(known))
    if unknown:
        names = ", ".join(sorted(known)) or "none"
        raise BadOption(f"harness {harness!r} has no option(s) {unknown} (known: {names})")
    return OptionValues({o.name: o.parse(given[o.name], harness) if o.name in given else o.default for o in declared})
