"""Ctrl-C and SIGTERM as KeyboardInterrupt, held back while an engine object is being created or removed.

An interrupt that lands between "the engine created a container" and "we know its id" would leak it;
one that lands inside a `finally` that removes objects would leave the rest. Such steps run in
`deferred_interrupts()`: a signal arriving there is remembered and raised when the step ends.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["deferred_interrupts", "install_interrupt_handlers"]

_state = threading.local()
_pending: list[int] = []


def _depth() -> int:
    return int(getattr(_state, "depth", 0))


def _handler(signum: int, _frame: FrameType | None) -> None:
    if _depth() > 0:
        _pending.append(signum)
        return
    raise KeyboardInterrupt


def install_interrupt_handlers() -> None:
    """SIGINT and SIGTERM both take the KeyboardInterrupt path, so every `finally` removes what the run created."""
    signal.signal(signal.SIGINT, _handler)
    signal.signal(signal.SIGTERM, _handler)


@contextmanager
def deferred_interrupts() -> Iterator[None]:
    """Run a short engine step to its end; an interrupt that arrived meanwhile is raised afterwards."""
    _state.depth = _depth() + 1
    try:
        yield
    finally:
        _state.depth = _depth() - 1
        if _state.depth == 0 and _pending:
            _pending.clear()
            raise KeyboardInterrupt
