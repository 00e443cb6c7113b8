"""SIGTERM as an exception, so the rollout is still written in a `finally` when the agent is stopped.

The exception is only ever raised in this agent's own code: calls into the SDK run in a worker thread that
cannot receive SIGINT or SIGTERM, while the main thread waits for them. An exception raised at an arbitrary
point inside httpcore can leave its connection pool's lock held, and its own clean-up then waits on that lock
forever (found by raising SIGTERM at each line after a request starts).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TypeVar

T = TypeVar("T")

_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


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


def in_worker(call: Callable[[], T], *, name: str) -> T:
    """`call()`, run in a daemon thread that blocks SIGINT and SIGTERM; its result or exception is returned here.

    The kernel then delivers either signal to the main thread, which is waiting in a lock acquire (interruptible):
    KeyboardInterrupt or Terminated is raised there, and the worker is abandoned where it stands. Being a daemon,
    it does not hold up the process's exit. Off the main thread there is no signal to keep out: `call` runs inline.
    """
    if threading.current_thread() is not threading.main_thread():
        return call()
    results: list[T] = []
    errors: list[BaseException] = []
    done = threading.Event()

    def work() -> None:
        try:
            results.append(call())
        except BaseException as exc:  # handed to the waiting thread, which raises it
            errors.append(exc)
        finally:
            done.set()

    worker = threading.Thread(target=work, name=name, daemon=True)
    # A new thread starts with its creator's mask: blocked around the start, so the worker never has them
    # unblocked. One that arrives meanwhile stays pending until the mask is restored, then acts here.
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    try:
        worker.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
    done.wait()
    if errors:
        raise errors[0]
    return results[0]
