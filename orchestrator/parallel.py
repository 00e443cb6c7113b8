"""Episodes of one run side by side: a bounded pool, grid-ordered results, shards, and a stop that leaves nothing."""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, TypeVar

import structlog

log = structlog.get_logger(__name__)

__all__ = [
    "EPISODE_MEMORY_GIB",
    "MAX_SHARDS",
    "Stopped",
    "default_jobs",
    "long_first",
    "parse_shard",
    "run_pool",
    "shard_slice",
]

T = TypeVar("T")
# One episode is a proxy (1 GiB limit) plus a harness; Node harnesses use most of another GiB.
EPISODE_MEMORY_GIB = 2.0
MAX_DEFAULT_JOBS = 8
# Far more slices than any batch engine runs for one grid; a larger N is a typo.
MAX_SHARDS = 100_000
_SHARD = re.compile(r"\s*([0-9]+)\s*/\s*([0-9]+)\s*")


class Stopped(RuntimeError):
    """The pool was stopped before this item started."""


def _memory_gib() -> float:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**30
    except (ValueError, OSError, AttributeError):
        return EPISODE_MEMORY_GIB


def default_jobs() -> int:
    """One episode per CPU, as many as memory holds at EPISODE_MEMORY_GIB each, at most MAX_DEFAULT_JOBS."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cpus, int(_memory_gib() // EPISODE_MEMORY_GIB), MAX_DEFAULT_JOBS))


def parse_shard(text: str) -> tuple[int, int]:
    """`I/N` (1-based, ASCII digits, N at most MAX_SHARDS) -> (I, N); ValueError names --shard and what is wrong."""
    # ASCII only: str.isdigit() takes '²' and other digits int() refuses.
    found = _SHARD.fullmatch(text)
    if found is None:
        raise ValueError(f"--shard {text!r} is not I/N: two whole numbers in digits 0-9 (e.g. 1/4)")
    # Leading zeros dropped and the length bounded first: int() refuses a string of over 4300 digits.
    index, count = (digits.lstrip("0") or "0" for digits in found.groups())
    if len(count) > len(str(MAX_SHARDS)) or int(count) > MAX_SHARDS:
        raise ValueError(f"--shard {text!r}: N is at most {MAX_SHARDS}")
    if len(index) > len(count):
        raise ValueError(f"--shard {text!r}: need 1 <= I <= N")
    i, n = int(index), int(count)
    if n < 1 or not 1 <= i <= n:
        raise ValueError(f"--shard {text!r}: need 1 <= I <= N")
    return i, n


def shard_slice(grid: Sequence[T], index: int, count: int) -> list[T]:
    """Shard `index` of `count` (1-based): every count-th item of the grid, so slices are disjoint, cover the grid,
    and spread each harness over the shards. Depends only on the grid's order, never on time or host."""
    return [item for k, item in enumerate(grid) if k % count == index - 1]


def long_first(grid: Sequence[T], may_run_long: Callable[[T], bool]) -> list[int]:
    """The order episodes start in when several run at once: those that may run long first (each group in grid
    order), so that a long one started last does not end the run alone while the other slots idle."""
    return sorted(range(len(grid)), key=lambda i: not may_run_long(grid[i]))


class _Running:
    """How many items are inside their work, counted by the items themselves: a stop that lands between an item's
    submission and the noting of its future (the item may already run, and be the one that stopped the run) still
    waits for it. An item that starts after the stop does no work (it sees the stop first)."""

    def __init__(self) -> None:
        self._count = 0
        self._changed = threading.Condition()

    def __enter__(self) -> None:
        with self._changed:
            self._count += 1

    def __exit__(self, *_: object) -> None:
        with self._changed:
            self._count -= 1
            self._changed.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        """True once no item runs (waiting up to `timeout` seconds)."""
        with self._changed:
            return self._changed.wait_for(lambda: self._count == 0, timeout)


def _reap(cleanup: Callable[[], object], futures: Sequence[Future[Any]], running: _Running, grace: float) -> None:
    """Remove the run's objects until every running item has returned (each removal ends a running episode
    early: its containers are gone), then once more for whatever a returning episode created meanwhile.

    A failed round never replaces the exception that stopped the run: a removal may race an episode's own, or a pod
    still being set up ahead. The run's clean-up after every set-up has returned (`run_suite`) is the last word."""
    deadline = time.monotonic() + grace
    while True:
        _cleanup_round(cleanup)
        pending = [f for f in futures if not f.done()]
        try:
            idle = running.wait_idle(0.0 if pending else 1.0)
            if (idle and not pending) or time.monotonic() > deadline:
                break
            if pending:
                wait(pending, timeout=1.0)
        except KeyboardInterrupt:  # a second Ctrl-C does not abandon the clean-up
            continue
    _cleanup_round(cleanup)


def _cleanup_round(cleanup: Callable[[], object]) -> None:
    try:
        cleanup()
    except Exception as exc:
        log.debug("cleanup round failed", error=str(exc))


def run_pool(
    items: Sequence[T],
    work: Callable[[T, Callable[[], None]], dict[str, Any]],
    jobs: int,
    cleanup: Callable[[], object],
    grace: float = 120.0,
    order: Sequence[int] | None = None,
    on_stop: Callable[[], None] | None = None,
) -> list[dict[str, Any]]:
    """`work(item, free)` for every item; results in the items' order, as a loop would give.

    `jobs` 1 is that loop: one item after the other, `free` does nothing. Otherwise items start in `order` (indexes
    into `items`; default their own order) and at most `jobs` items hold a slot at once, each until it calls
    `free()` (its harness ended) or returns: what it does after `free()` (collecting, checking) overlaps the next
    item, so an item's tail never idles a slot; at most `jobs` more items are in such a tail at once. On any
    exception (Ctrl-C included) nothing new starts, `cleanup` removes the run's objects until every started item
    has returned, and the exception propagates. `on_stop` is called on Ctrl-C (or SIGTERM) before that clean-up
    begins: the items still running can tell they were cut short.
    """
    if jobs <= 1:
        return [work(item, _nothing) for item in items]
    stop = threading.Event()
    slots = threading.Semaphore(jobs)
    running = _Running()

    def guarded(item: T) -> dict[str, Any]:
        freed = threading.Lock()  # taken once: the slot is given back exactly once, by free() or on return

        def free() -> None:
            if freed.acquire(blocking=False):
                slots.release()

        with running:
            try:
                if stop.is_set():
                    raise Stopped("stopped before it started")
                return work(item, free)
            except BaseException:
                stop.set()  # at once, before the next item is given a slot
                raise
            finally:
                free()

    starts = list(range(len(items))) if order is None else list(order)
    if sorted(starts) != list(range(len(items))):
        raise ValueError("order must name every item exactly once")
    pool = ThreadPoolExecutor(max_workers=2 * jobs, thread_name_prefix="episode")
    futures: list[Future[dict[str, Any]]] = []
    by_item: dict[int, Future[dict[str, Any]]] = {}
    try:
        for index in starts:
            while not slots.acquire(timeout=1.0):
                _raise_first_error(futures)
            _raise_first_error(futures)
            if stop.is_set():
                break
            by_item[index] = pool.submit(guarded, items[index])
            futures.append(by_item[index])
        pending: set[Future[dict[str, Any]]] = set(futures)
        while pending:
            done, pending = wait(pending, timeout=1.0, return_when=FIRST_COMPLETED)
            _raise_first_error(done)
    except BaseException as exc:
        stop.set()
        if on_stop is not None and isinstance(exc, KeyboardInterrupt):
            on_stop()
        for f in futures:
            f.cancel()
        log.warning("stopping: removing every running episode's containers", running=sum(not f.done() for f in futures))
        _reap(cleanup, futures, running, grace)
        if isinstance(exc, Stopped):  # seen before the failure that caused it: raise that failure
            cause = [e for f in futures if f.done() and not f.cancelled() and (e := f.exception()) is not None]
            raise next((e for e in cause if not isinstance(e, Stopped)), exc) from None
        raise
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return [by_item[i].result() for i in range(len(items))]


def _nothing() -> None:
    pass


def _raise_first_error(futures: Iterable[Future[dict[str, Any]]]) -> None:
    """An item that raised (a bug of ours) stops the run like a loop would: its error, not a Stopped."""
    errors = [e for f in futures if f.done() and not f.cancelled() and (e := f.exception()) is not None]
    if errors:
        raise next((e for e in errors if not isinstance(e, Stopped)), errors[0])
