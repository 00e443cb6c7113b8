"""A named gap: a fact the harness did not report, so no check mistakes its absence for zero."""
# No `from __future__ import annotations`: TypedDict reads NotRequired/Required from evaluated annotations.

import json
from typing import NotRequired, TypedDict

__all__ = ["Gap", "gap", "unique_gaps"]


class Gap(TypedDict):
    code: str
    detail: str
    labels: NotRequired[list[str]]


def gap(code: str, detail: str, labels: list[str] | None = None) -> Gap:
    """A gap in the schema's key order; `labels` only when the gap names the evidence it touches."""
    return {"code": code, "detail": detail} if labels is None else {"code": code, "detail": detail, "labels": labels}


def unique_gaps(gaps: list[Gap]) -> list[Gap]:
    """Each gap once, in first-seen order (a gap found per record is named per run)."""
    seen: set[str] = set()
    out = []
    for g in gaps:
        key = json.dumps(g, sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(g)
    return out
