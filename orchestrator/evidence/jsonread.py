"""The one strict JSON reader for everything a harness could have shaped: bounded depth, sizes and integers."""

from __future__ import annotations

import codecs
import json
import math
import os
import re
import stat
from collections.abc import Iterator, Sequence
from itertools import accumulate, repeat
from operator import add
from pathlib import Path
from typing import Any

import orjson

from orchestrator.evidence.bulk import gc_paused

__all__ = [
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_INT_DIGITS",
    "MAX_VALUES",
    "JsonFault",
    "compact_objects",
    "loads",
    "read_below",
    "read_bytes",
    "read_chunks",
    "read_json",
    "strings",
]

MAX_DEPTH = 128  # our own formats nest under 10 levels; harness logs a few dozen at most
MAX_INT_DIGITS = 40  # far beyond any count, timestamp or id; a 100,000-digit integer is a CPU sink
MAX_FILE_BYTES = 256 * 1024 * 1024  # the collection byte cap: nothing collected is larger
# Values a text may hold, counted from above as its commas and opening brackets: the byte cap bounds the text, not
# what it becomes. 250 MB of `[],` is 87 million lists (8 GB held); a 100,000-call rollout holds 4.6 million, and
# one at the byte cap about 9 million, about a gigabyte as every such text is held.
MAX_VALUES = 12_000_000

_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_STRING = re.compile(rb'"[^"]*"')
_NOT_BRACKETS = bytes(range(256)).translate(None, b"[]{}")
_PAIR = re.compile(rb"\[\]|\{\}")
# Digits to "0", all else to " ": a run of more digits than an integer may have is then one substring test, in C.
_DIGITS = bytes(48 if 48 <= c <= 57 else 32 for c in range(256))
_LONG_RUN = b"0" * (MAX_INT_DIGITS + 1)
# Where a lone surrogate could come from: a \uD800-\uDFFF escape, or its UTF-8-like bytes (json.loads decodes bytes
# with surrogatepass). Only a text with one of these is walked for a string that is not Unicode text.
_SURROGATE_HINT = re.compile(rb"\\u[dD][89a-fA-F]|\xed[\xa0-\xbf]")
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}
_MISS = object()
# Lines serialised together in compact_objects' one comparison: large enough that the per-call cost vanishes, small
# enough that the joined copy stays a few MiB.
_BATCH_LINES = 4096


def _json_escape(exc: UnicodeError) -> tuple[str, int]:
    # json.dumps' ensure_ascii form of what orjson writes as UTF-8: \uXXXX, astral characters as surrogate pairs.
    assert isinstance(exc, UnicodeEncodeError)
    out = []
    for ch in exc.object[exc.start : exc.end]:
        n = ord(ch)
        if n > 0xFFFF:
            n -= 0x10000
            out.append(f"\\u{0xD800 | (n >> 10):04x}\\u{0xDC00 | (n & 0x3FF):04x}")
        else:
            out.append(f"\\u{n:04x}")
    return "".join(out), exc.end


_ESCAPE_HANDLER = "harness_probe.json_escape"
codecs.register_error(_ESCAPE_HANDLER, _json_escape)


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


def _escaped_as(canonical: bytes, raw: bytes) -> bytes:
    """orjson's text with the escapes json.dumps writes where it writes UTF-8 (non-ASCII, DEL), if `raw` has them."""
    if raw.isascii() and not canonical.isascii():
        canonical = canonical.decode("utf-8").encode("ascii", _ESCAPE_HANDLER)
    # json.dumps escapes DEL; a raw DEL can only be inside a string.
    if b"\x7f" in canonical:
        canonical = canonical.replace(b"\x7f", b"\\u007f")
    return canonical


def _unspaced(text: bytes) -> bytes:
    return text.replace(b", ", b",").replace(b": ", b":")


def _as_written(value: Any, raw: bytes, indented: bool) -> bool:
    """Whether `raw` is, byte for byte, what our writers write for `value` (orjson's or json.dumps' form)."""
    if not indented:
        colon = raw.find(b'":')  # the first key's colon: json.dumps' default separators (", ", ": ") are its alone
        if colon >= 0 and raw[colon + 2 : colon + 3] == b" ":
            # json.dumps' form, compared without json.dumps (seconds on a 100 MB rollout): orjson's compact text and
            # `raw`, each with one space after every ", " and ": " taken out. Quotes and backslashes are left as they
            # are, so both read as the same tokens they did (strings stay strings, only spaces in them can go):
            # equal, `raw` holds the serialiser's very tokens in its order (each key written once, its numbers,
            # no constant), whatever spaces it has after separators, so it reads as orjson read it.
            # orjson's text has a ", " or ": " only inside a string: most texts hold none, and then the orjson text
            # itself is what the unspaced `raw` must equal (two passes over a 100 MB text fewer).
            canonical, unspaced = _escaped_as(orjson.dumps(value), raw), _unspaced(raw)
            if unspaced == canonical or unspaced == _unspaced(canonical):
                return True
            return json.dumps(value).encode("utf-8", "surrogatepass") == raw
    # orjson's indented layout is json.dumps(indent=2)'s; write_json adds a newline, the scenario writer does not.
    newline = orjson.OPT_APPEND_NEWLINE if raw.endswith(b"\n") else 0
    canonical = orjson.dumps(value, option=orjson.OPT_INDENT_2 | newline if indented else None)
    if canonical == raw:
        return True
    canonical = _escaped_as(canonical, raw)
    if canonical == raw or indented:
        return canonical == raw
    # What still differs is json.dumps' spelling of floats (1e+16 for orjson's 1e16): ask json.dumps itself.
    return json.dumps(value, separators=(",", ":")).encode("utf-8", "surrogatepass") == raw


def compact_objects(lines: Sequence[bytes], max_depth: int = MAX_DEPTH) -> list[dict[str, Any]] | None:
    """The object `loads` reads from each line, when every line is orjson's compact form of an object; None when
    only `loads` can say (`_fast`'s rule for the one form a JSON Lines writer uses, the proxy's witness).

    Without a Python step per line (a witness has hundreds of thousands): each line is read by orjson on its own,
    then a batch of them is serialised at once and compared with the lines joined by commas.
    That equality proves each line equal to its own value's serialisation: every line was read alone, so it is
    one JSON text, and it starts, as the batch's text does at that place, with the `{` of an object whose extent
    the text fixes (brackets and strings are matched the same way, read alone or in the batch); had the line
    ended before or after that object's `}`, it would have been cut short or gone on past it into a comma, and
    was then not JSON on its own.
    """
    if not lines:
        return []
    if set(map(type, lines)) != {bytes}:
        return None
    try:
        values = list(map(orjson.loads, lines))
    except ValueError:  # orjson's decode error
        return None
    if set(map(type, values)) != {dict}:
        return None
    # Nesting is never deeper than the number of opening brackets, line by line.
    opening = map(add, map(bytes.count, lines, repeat(b"[")), map(bytes.count, lines, repeat(b"{")))
    if max(opening) > max_depth:
        return None
    dumps = orjson.dumps
    try:
        for i in range(0, len(lines), _BATCH_LINES):
            if dumps(values[i : i + _BATCH_LINES]) != b"[" + b",".join(lines[i : i + _BATCH_LINES]) + b"]":
                return None
    except TypeError:  # orjson's encode error
        return None
    return values


def _fast(raw: bytes, max_depth: int) -> Any:
    """The value of `raw` when it is exactly as a serialiser writes it; _MISS when the strict reader must decide.

    orjson keeps the last of duplicate keys, refuses integers beyond 64 bits only by reading them as floats, and
    nests to 1024: on its own it cannot refuse what `loads` refuses. But a text that equals, byte for byte, the
    serialisation of the value read from it has no duplicate key (a serialiser writes each key once), no integer
    longer than 20 digits, no NaN or overflowing number; only its depth is left to bound, here.
    """
    indented = raw[:2] in (b"{\n", b"[\n")
    try:
        value = orjson.loads(raw)
        if not _as_written(value, raw, indented):
            return _MISS
        if raw.count(b"[") + raw.count(b"{") <= max_depth:
            return value
        # In the indented layout a value nested in k containers starts its line with 2k spaces: when no line is
        # indented that far, nothing is nested deeper than max_depth (the text has the value's own nesting).
        layout = raw if indented else orjson.dumps(value, option=orjson.OPT_INDENT_2)
    except (ValueError, TypeError, RecursionError):  # orjson's decode and encode errors are of these kinds
        return _MISS
    if b"\n" + b" " * (2 * max_depth) not in layout:
        return value
    return value if _depth(_skeleton(raw), max_depth) <= max_depth else _MISS


def loads(text: str | bytes, max_depth: int = MAX_DEPTH) -> Any:
    """Parse strict JSON; every refusal is a JsonFault with a reason, never a RecursionError or a hang."""
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if len(raw) > MAX_VALUES:  # shorter texts cannot hold more values than they have bytes
        values = raw.count(b",") + raw.count(b"[") + raw.count(b"{")
        if values > MAX_VALUES:
            raise JsonFault(f"holds up to {values} values (commas and opening brackets), more than {MAX_VALUES}")
    # Most texts are as our own writers wrote them: orjson reads them, and the strict reader below judges (and
    # names the fault of) everything else.
    value = _fast(raw, max_depth)
    if value is not _MISS:
        return value
    # Nesting cannot be deeper than the number of opening brackets: most texts need no measuring.
    if raw.count(b"[") + raw.count(b"{") > max_depth:
        deepest = _depth(_skeleton(raw), max_depth)
        if deepest > max_depth:
            raise JsonFault(f"nested {deepest} levels deep (more than {max_depth})")
    try:
        value = _slow(raw)
    except JsonFault:
        raise
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, bad UTF-8
        raise JsonFault(f"not JSON: {exc}") from None
    if _SURROGATE_HINT.search(raw):
        _no_lone_surrogate(value)
    return value


def _no_lone_surrogate(value: Any) -> None:
    """Refuse a string (key or value) holding a lone surrogate: not Unicode text, it breaks every writer after us."""
    try:
        # One C pass over the whole value: a lone surrogate is the only thing that does not encode as UTF-8.
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = exc.object[exc.start : exc.end]
        raise JsonFault(f"a lone surrogate (\\u{ord(bad[0]):04x}) in a string: not Unicode text") from None


def _slow(raw: bytes) -> Any:
    # Integers are checked by a hook only where a long enough digit run exists (the hook is the only cost
    # per number that matters on large files); floats and constants are always checked, they are rare.
    if _LONG_RUN not in raw.translate(_DIGITS):
        return json.loads(raw, parse_constant=_no_constant, parse_float=_float, object_pairs_hook=_pairs)
    return json.loads(raw, parse_constant=_no_constant, parse_int=_int, parse_float=_float, object_pairs_hook=_pairs)


def _open_regular(path: Path | str, max_bytes: int, dir_fd: int | None = None) -> tuple[int, os.stat_result]:
    """A regular file opened without following a link or opening a FIFO or device, no larger than max_bytes now."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
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
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def read_chunks(path: Path | str, max_bytes: int = MAX_FILE_BYTES, size: int = 1 << 20) -> Iterator[bytes]:
    """read_bytes' content in pieces of `size` bytes, under the same rules: a large file is never whole in memory.
    A file that grows past the cap while it is read is refused at the piece that crosses it."""
    fd, _ = _open_regular(path, max_bytes)
    try:
        left = max_bytes + 1
        while left > 0 and (piece := os.read(fd, min(left, size))):
            left -= len(piece)
            if left <= 0:
                raise JsonFault(f"is more than the {max_bytes}-byte cap")
            yield piece
    finally:
        os.close(fd)


def read_below(root: Path, parts: tuple[str, ...]) -> bytes:
    """A regular file below root, each folder on the way and the file itself reached without following a link; a
    fault names the file by its parts."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            try:
                nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except OSError as exc:
                why = f"{part} is not a folder reached without a link ({exc.strerror})"
                raise JsonFault(f"{'/'.join(parts)}: {why}") from None
            os.close(fd)
            fd = nxt
        try:
            return read_bytes(parts[-1], dir_fd=fd)
        except JsonFault as exc:
            raise JsonFault(f"{'/'.join(parts)}: {exc}") from None
    finally:
        os.close(fd)


def read_bytes(path: Path | str, max_bytes: int = MAX_FILE_BYTES, dir_fd: int | None = None) -> bytes:
    """A regular file's content, without following a link or opening a FIFO or device, at most max_bytes.

    `dir_fd`: a folder's descriptor `path` is relative to (many files of one folder, no path resolved again).
    """
    fd, st = _open_regular(path, max_bytes, dir_fd)
    try:
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


def strings(value: Any) -> Iterator[str]:
    """Every string a parsed JSON value holds, at any depth (keys left out)."""
    pending = [value]
    while pending:
        v = pending.pop()
        if isinstance(v, str):
            yield v
        elif isinstance(v, dict):
            pending += v.values()
        elif isinstance(v, list):
            pending += v
