"""Building many small objects at once (a 400,000-line witness, a 100,000-call rollout's checks) with the cyclic GC
paused: each full collection walks every live object, so collections triggered while such a structure grows make
the work quadratic. JSON data has no reference cycles, so nothing waits longer to be freed than the pause."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused"]

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """Nestable and shared between threads: the collector resumes when the last pause ends (if it ran before)."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()
