"""SIGTERM as an exception, so the rollout is still written in a `finally` when the agent is stopped."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class Terminated(BaseException):
    """Raised in the main thread on SIGTERM; a BaseException so the SDK does not retry it."""


class _State:
    raised = False  # only the first SIGTERM raises: a second must not abort the shutdown it started
    shielded = False  # while the rollout is being written, SIGTERM is swallowed: the run is ending anyway


_state = _State()


def _handler(signum: int, frame: FrameType | None) -> None:
    if _state.raised or _state.shielded:
        return
    _state.raised = True
    raise Terminated(f"received {signal.Signals(signum).name}")


@contextmanager
def sigterm_raises() -> Iterator[None]:
    """While active, SIGTERM raises Terminated in the main thread (once)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be installed from the main thread
        return
    _state.raised = False
    previous = signal.signal(signal.SIGTERM, _handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def shielded() -> Iterator[None]:
    """Keep SIGTERM from interrupting the block (the final rollout write)."""
    before = _state.shielded
    _state.shielded = True
    try:
        yield
    finally:
        _state.shielded = before
