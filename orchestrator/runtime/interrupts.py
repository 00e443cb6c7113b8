"""Ctrl-C and SIGTERM as KeyboardInterrupt, held back while an engine object is being created or removed.

An interrupt that lands between "the engine created a container" and "we know its id" would leak it;
one that lands inside a `finally` that removes objects would leave the rest. Such steps run in
`deferred_interrupts()`: a signal arriving there is remembered and raised when the step ends. The first signal's
name is kept for the run's partial summary (`received_signal()`).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["deferred_interrupts", "install_interrupt_handlers", "received_signal"]

_state = threading.local()
_pending: list[int] = []
_received: list[int] = []


def _depth() -> int:
    return int(getattr(_state, "depth", 0))


def _handler(signum: int, _frame: FrameType | None) -> None:
    _received.append(signum)
    if _depth() > 0:
        _pending.append(signum)
        return
    raise KeyboardInterrupt


def install_interrupt_handlers() -> None:
    """SIGINT and SIGTERM both take the KeyboardInterrupt path, so every `finally` removes what the run created."""
    signal.signal(signal.SIGINT, _handler)
    signal.signal(signal.SIGTERM, _handler)


def received_signal() -> str | None:
    """The name of the first SIGINT or SIGTERM this process took (`SIGINT`), None when none came (a KeyboardInterrupt
    raised some other way)."""
    return signal.Signals(_received[0]).name if _received else None


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
