"""Plain-text progress lines on stderr, so the orchestrator's log shows what happened."""

from __future__ import annotations

import sys


def say(message: str) -> None:
    # sys.stderr is looked up on every call because tests (and embedders) may swap it.
    print(f"probe-reference: {message}", file=sys.stderr, flush=True)
