"""Reads a JSONL file a harness appended line by line: every object line kept, a corrupt or cut-off line named."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from orchestrator.harnesses.base import NormalizeError

__all__ = ["json_reason", "loads_line", "read_jsonl", "read_stream", "session_file", "stream_session"]


def read_jsonl(path: Path, what: str, problems: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """Every JSON object line; a cut-off last line or a corrupt line is skipped and named in `problems` as
    (gap code, detail), never fatal. `what` names the file in the codes (`native.<what>_truncated`)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise NormalizeError(f"{what} {path.name} cannot be read: {exc}") from None
    text = raw.decode("utf-8", errors="replace")
    lines = text.split("\n")
    entries: list[dict[str, Any]] = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = loads_line(line)
        except (ValueError, RecursionError) as exc:  # ValueError: JSONDecodeError, or an integer too long to convert
            # Harnesses append whole lines, each ending in a newline: an unterminated last line was cut off.
            msg = json_reason(exc)
            if n == len(lines):
                problems.append((f"native.{_code(what)}_truncated", f"{path.name}: last line cut off ({msg})"))
            else:
                problems.append((f"native.{_code(what)}_corrupt_line", f"{path.name} line {n}: not JSON ({msg})"))
            continue
        if not isinstance(value, dict):
            problems.append((f"native.{_code(what)}_corrupt_line", f"{path.name} line {n}: not a JSON object"))
            continue
        entries.append(value)
    return entries


def loads_line(text: str | bytes) -> Any:
    """json.loads, refusing what is no JSON though Python accepts it: NaN, Infinity, -Infinity and a float beyond
    range (1e400) raise ValueError, as a JSONDecodeError, an integer too long to convert or bytes not UTF-8 do. So
    does a string holding a lone surrogate (a \\uD800 escape): it is no Unicode text, and the rollout it reached
    would be refused whole by the strict reader, where only its line is lost here."""
    value = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    hint = _SURROGATE_HINT_TEXT if isinstance(text, str) else _SURROGATE_HINT_BYTES
    if hint.search(text) is not None:  # type: ignore[arg-type]  # the pattern matches the text's type
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")  # one C pass; only a lone surrogate fails it
        except UnicodeEncodeError as exc:
            bad = ord(exc.object[exc.start])
            raise ValueError(f"a lone surrogate (\\u{bad:04x}) in a string: not Unicode text") from None
    return value


# Where a lone surrogate can come from: a \uD800-\uDFFF escape, or (json.loads reads bytes with surrogatepass) its
# UTF-8-like bytes, or a str that already holds one.
_SURROGATE_HINT_TEXT = re.compile(r"\\u[dD][89a-fA-F]|[\ud800-\udfff]")
_SURROGATE_HINT_BYTES = re.compile(rb"\\u[dD][89a-fA-F]|\xed[\xa0-\xbf]")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is no JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:40]} is out of range for a number")
    return value


def json_reason(exc: ValueError | RecursionError) -> str:
    """Why json.loads refused a text, in a few words."""
    if isinstance(exc, json.JSONDecodeError):
        return exc.msg
    if isinstance(exc, RecursionError):
        return "nested too deep"
    return str(exc).split(":", 1)[0]  # "Exceeds the limit (4300 digits) for integer string conversion"


def _code(what: str) -> str:
    return what.replace("-", "_").replace(" ", "_")


def stream_session(stream: list[dict[str, Any]]) -> str | None:
    """The session id a stream-json stdout names (its first `session_id`), or None."""
    for e in stream:
        sid = e.get("session_id")
        if isinstance(sid, str) and sid:
            return sid
    return None


def session_file(candidates: list[Path], session: str | None, what: str) -> Path:
    """The file of this run's session among `candidates` (named `<session>.jsonl`): the one the stream names, else
    the only one; NormalizeError when several remain and nothing tells them apart."""
    if session is not None:
        for p in candidates:
            if p.stem == session:
                return p
    if len(candidates) == 1:
        return candidates[0]
    names = ", ".join(p.name for p in candidates)
    raise NormalizeError(f"several {what} ({names}) and no stream-json naming this run's session")


def read_stream(native_dir: Path, rel: str, problems: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """The stream-json stdout our launch saved at native/<rel>, or none with `native.stream_missing` named."""
    path = native_dir / rel
    if path.is_file():
        return read_jsonl(path, "stream", problems)
    problems.append(("native.stream_missing", f"{rel} (stdout stream-json) was not collected"))
    return []
