"""The one strict JSON reader for everything a harness could have shaped: bounded depth, sizes and integers."""

from __future__ import annotations

import json
import math
import os
import re
import stat
from itertools import accumulate
from pathlib import Path
from typing import Any

from orchestrator.evidence.bulk import gc_paused

__all__ = ["MAX_DEPTH", "MAX_FILE_BYTES", "MAX_INT_DIGITS", "JsonFault", "loads", "read_bytes", "read_json"]

MAX_DEPTH = 128  # our own formats nest under 10 levels; harness logs a few dozen at most
MAX_INT_DIGITS = 40  # far beyond any count, timestamp or id; a 100,000-digit integer is a CPU sink
MAX_FILE_BYTES = 256 * 1024 * 1024  # the collection byte cap: nothing collected is larger

_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_STRING = re.compile(rb'"[^"]*"')
_NOT_BRACKETS = bytes(range(256)).translate(None, b"[]{}")
_PAIR = re.compile(rb"\[\]|\{\}")
# Digits to "0", all else to " ": a run of more digits than an integer may have is then one substring test, in C.
_DIGITS = bytes(48 if 48 <= c <= 57 else 32 for c in range(256))
_LONG_RUN = b"0" * (MAX_INT_DIGITS + 1)
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


class JsonFault(ValueError):
    """A JSON text we refuse: not JSON, too deep, NaN/Infinity, a huge integer, a duplicate key, too large."""


def _skeleton(raw: bytes) -> bytes:
    # What is outside strings: escapes first, then strings, all in C.
    return _STRING.sub(b"", _ESCAPE.sub(b"", raw))


def _depth(skeleton: bytes, limit: int = MAX_DEPTH) -> int:
    """How deep brackets nest: within the limit, by peeling innermost pairs in C, one pass per level."""
    brackets = skeleton.translate(None, _NOT_BRACKETS)
    rest, level = brackets, 0
    while rest and level <= limit:
        peeled = _PAIR.sub(b"", rest)
        if len(peeled) == len(rest):
            break  # unbalanced: not JSON, but its depth is still measured exactly below
        rest, level = peeled, level + 1
    if not rest:
        return level
    return max(accumulate(_STEP[c] for c in brackets), default=0)


def _no_constant(name: str) -> Any:
    raise JsonFault(f"{name} is not JSON (NaN and Infinity are refused)")


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise JsonFault(f"an integer of {len(text)} digits (more than {MAX_INT_DIGITS})")
    return int(text)


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JsonFault(f"the number {text[:40]} overflows to infinity")
    return value


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise JsonFault(f"duplicate key {key[:80]!r}")
            seen.add(key)
    return out


def loads(text: str | bytes, max_depth: int = MAX_DEPTH) -> Any:
    """Parse strict JSON; every refusal is a JsonFault with a reason, never a RecursionError or a hang."""
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    # Nesting cannot be deeper than the number of opening brackets: most texts need no measuring.
    if raw.count(b"[") + raw.count(b"{") > max_depth:
        deepest = _depth(_skeleton(raw), max_depth)
        if deepest > max_depth:
            raise JsonFault(f"nested {deepest} levels deep (more than {max_depth})")
    try:
        # Integers are checked by a hook only where a long enough digit run exists (the hook is the only cost
        # per number that matters on large files); floats and constants are always checked, they are rare.
        if _LONG_RUN not in raw.translate(_DIGITS):
            return json.loads(raw, parse_constant=_no_constant, parse_float=_float, object_pairs_hook=_pairs)
        return json.loads(
            raw, parse_constant=_no_constant, parse_int=_int, parse_float=_float, object_pairs_hook=_pairs
        )
    except JsonFault:
        raise
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, bad UTF-8
        raise JsonFault(f"not JSON: {exc}") from None


def read_bytes(path: Path, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """A regular file's content, without following a link or opening a FIFO or device, at most max_bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise JsonFault(f"cannot be opened safely ({exc.strerror}; links are not followed)") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise JsonFault("is not a regular file")
        if st.st_size > max_bytes:
            raise JsonFault(f"is {st.st_size} bytes, more than the {max_bytes}-byte cap")
        # Plain reads, sized by fstat (the file may still grow: read on until the cap says no).
        chunks, left = [], max_bytes + 1
        while left > 0 and (piece := os.read(fd, min(left, max(st.st_size + 1, 1 << 16)))):
            chunks.append(piece)
            left -= len(piece)
        data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise JsonFault(f"is more than the {max_bytes}-byte cap")
    return data


def read_json(path: Path, max_bytes: int = MAX_FILE_BYTES, max_depth: int = MAX_DEPTH) -> Any:
    """read_bytes + loads; faults name the file."""
    try:
        with gc_paused():  # a large file is hundreds of thousands of dicts: no quadratic GC walks while parsed
            return loads(read_bytes(path, max_bytes), max_depth)
    except JsonFault as exc:
        raise JsonFault(f"{path.name}: {exc}") from None
