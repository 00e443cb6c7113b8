"""One sentence per harness whose pin was overridden, the same in every report (terminal, report.md, report.html)."""

from __future__ import annotations

from typing import Any

__all__ = ["override_text", "overrides_of"]


def override_text(name: str, override: dict[str, Any], ran: str | None = None) -> str:
    """`pi: pin 0.73.1 overridden by release 0.72.1; version that ran: pi 0.72.1` (the image's own answer, from
    `ran` or the override's record); a source names its path and content hash."""
    ran = ran if ran is not None else override.get("ran")
    pinned = override.get("pinned")
    pin = f"pin {pinned}" if pinned else "pinned image folder"
    if override["kind"] == "version":
        what = f"release {override.get('version')}"
    else:
        kind, digest = override.get("source_kind"), override.get("source_sha256")
        what = f"local source {override.get('source')} ({kind}, sha256 {digest})"
    return f"{name}: {pin} overridden by {what}" + (f"; version that ran: {ran}" if ran else "")


def overrides_of(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found = summary.get("harness_overrides")
    return dict(found) if isinstance(found, dict) else {}
