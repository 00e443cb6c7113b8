"""Reads a JSONL file a harness appended line by line: every object line kept, a corrupt or cut-off line named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from orchestrator.harnesses.base import NormalizeError

__all__ = ["read_jsonl"]


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
            value = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            # Harnesses append whole lines, each ending in a newline: an unterminated last line was cut off.
            msg = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deep"
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


def _code(what: str) -> str:
    return what.replace("-", "_").replace(" ", "_")
