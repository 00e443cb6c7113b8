"""A named gap: a fact the harness did not report, so no check mistakes its absence for zero."""
# No `from __future__ import annotations`: TypedDict reads NotRequired/Required from evaluated annotations.

from typing import NotRequired, TypedDict

__all__ = ["Gap", "gap"]


class Gap(TypedDict):
    code: str
    detail: str
    labels: NotRequired[list[str]]


def gap(code: str, detail: str, labels: list[str] | None = None) -> Gap:
    """A gap in the schema's key order; `labels` only when the gap names the evidence it touches."""
    return {"code": code, "detail": detail} if labels is None else {"code": code, "detail": detail, "labels": labels}
