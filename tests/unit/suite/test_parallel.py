"""The episode pool without an engine: grid order, bounded concurrency, shards, and the stop that reaps."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable

import pytest

from orchestrator.parallel import default_jobs, long_first, parse_shard, run_pool, shard_slice


def test_results_in_grid_order_and_bounded() -> None:
    active, peak, lock = 0, 0, threading.Lock()

    def work(i: int, free: Callable[[], None]) -> dict[str, int]:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        time.sleep(random.uniform(0, 0.03))
        with lock:
            active -= 1
        return {"i": i}

    out = run_pool(list(range(20)), work, 3, cleanup=lambda: None)
    assert [r["i"] for r in out] == list(range(20))
    assert peak == 3
    assert run_pool(list(range(5)), work, 1, cleanup=lambda: None) == [{"i": i} for i in range(5)]


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_freed_slot_starts_the_next_item_while_the_tail_runs(jobs: int) -> None:
    """With --jobs 2 an item that calls free() (its harness ended) lets the next one start while it finishes
    (collects, checks); at most `jobs` items hold a slot at once, and results keep the grid's order. --jobs 1
    runs items strictly in turn."""
    holding, in_tail, peak_holding, peak_all, lock = 0, 0, 0, 0, threading.Lock()

    def work(i: int, free: Callable[[], None]) -> dict[str, int]:
        nonlocal holding, in_tail, peak_holding, peak_all
        with lock:
            holding += 1
            peak_holding = max(peak_holding, holding)
            peak_all = max(peak_all, holding + in_tail)
        time.sleep(random.uniform(0.005, 0.02))
        with lock:
            holding -= 1
            in_tail += 1
        free()
        free()  # a second call is harmless: the slot is given back once
        time.sleep(0.03)  # the tail: longer than the next item's run
        with lock:
            in_tail -= 1
        return {"i": i}

    out = run_pool(list(range(12)), work, jobs, cleanup=lambda: None)
    assert [r["i"] for r in out] == list(range(12))
    assert peak_holding == jobs
    if jobs == 1:
        assert peak_all == 1
    else:
        assert jobs < peak_all <= 2 * jobs  # items ran while others' tails did, and the tails are bounded too


def test_failure_stops_new_work_and_reaps_running_items() -> None:
    """An episode raising (or Ctrl-C in the main thread) removes the run's objects until running ones return."""
    removed = threading.Event()
    started: list[int] = []
    cleanups = 0

    def cleanup() -> None:
        nonlocal cleanups
        cleanups += 1
        removed.set()  # what removing the containers does to a running episode: it ends

    def work(i: int, free: Callable[[], None]) -> dict[str, int]:
        started.append(i)
        if i == 0:
            time.sleep(0.05)
            raise RuntimeError("boom")
        assert removed.wait(10), "never reaped"
        return {"i": i}

    with pytest.raises(RuntimeError, match="boom"):
        run_pool(list(range(10)), work, 2, cleanup=cleanup)
    assert sorted(started) == [0, 1]  # nothing new started after the failure
    assert cleanups >= 2  # while items ran, and once after the last returned


def test_a_failing_clean_up_round_never_replaces_the_runs_own_error() -> None:
    """A round of removal racing an episode's own (the engine's 409 "in use") is not the run's error: the stop's
    cause propagates, and the run's last clean-up (after every set-up has returned) comes later, in run_suite."""
    calls = 0

    def cleanup() -> None:
        nonlocal calls
        calls += 1
        raise RuntimeError("409 volume is in use")

    def work(i: int, free: Callable[[], None]) -> dict[str, int]:
        if i == 0:
            raise ValueError("boom")
        return {"i": i}

    with pytest.raises(ValueError, match="boom"):
        run_pool(list(range(4)), work, 2, cleanup=cleanup)
    assert calls >= 2  # every round was tried, the last one included


def test_shards_are_disjoint_cover_and_deterministic() -> None:
    grid = [(h, s) for h in "abc" for s in range(7)]
    for n in (1, 2, 3, 5, 30):
        slices = [shard_slice(grid, i, n) for i in range(1, n + 1)]
        flat = [x for sl in slices for x in sl]
        assert sorted(flat) == sorted(grid) and len(flat) == len(grid)
        assert slices == [shard_slice(grid, i, n) for i in range(1, n + 1)]
    # Round robin spreads each harness over the shards instead of giving one shard a whole harness.
    assert {h for h, _ in shard_slice(grid, 1, 2)} == {"a", "b", "c"}


@pytest.mark.parametrize(("text", "ok"), [("1/2", (1, 2)), ("3/3", (3, 3)), ("0/2", None), ("3/2", None),
                                          ("1", None), ("a/b", None), ("1/0", None)])  # fmt: skip
def test_parse_shard(text: str, ok: tuple[int, int] | None) -> None:
    if ok:
        assert parse_shard(text) == ok
    else:
        with pytest.raises(ValueError, match="--shard"):
            parse_shard(text)


def test_default_jobs_is_bounded() -> None:
    assert 1 <= default_jobs() <= 8


def test_side_by_side_items_start_in_the_given_order_and_results_keep_the_items_order() -> None:
    started: list[int] = []
    lock = threading.Lock()
    both_long = threading.Barrier(2, timeout=10)  # the two long ones must run together before either returns

    def work(i: int, free: Callable[[], None]) -> dict[str, int]:
        with lock:
            started.append(i)
        if i in (3, 6):
            both_long.wait()
        return {"i": i}

    order = long_first(list(range(8)), lambda i: i in (3, 6))
    assert order == [3, 6, 0, 1, 2, 4, 5, 7]
    out = run_pool(list(range(8)), work, 2, cleanup=lambda: None, order=order)
    assert [r["i"] for r in out] == list(range(8))
    assert set(started[:2]) == {3, 6} and sorted(started[2:]) == [0, 1, 2, 4, 5, 7]
    with pytest.raises(ValueError, match="exactly once"):
        run_pool(list(range(3)), work, 2, cleanup=lambda: None, order=[0, 0, 1])


def test_a_stop_between_an_items_submission_and_the_noting_of_its_future_still_waits_for_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ctrl-C that lands right after an item was handed to the pool, before the pool noted its future (the item
    already running, as the item that stopped the run is): the stop still reaps and waits for that item. It once
    returned while the item ran on, so the interrupted run dropped the folder of the very episode it was writing."""
    import concurrent.futures
    from typing import Any

    from orchestrator import parallel

    running = threading.Event()
    returned: list[int] = []

    class StoppedRightAfterSubmit(concurrent.futures.ThreadPoolExecutor):
        def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
            future = super().submit(fn, *args, **kwargs)
            if args and args[0] == 1:
                assert running.wait(10)
                raise KeyboardInterrupt  # where a signal may land: before the caller has the future
            return future

    monkeypatch.setattr(parallel, "ThreadPoolExecutor", StoppedRightAfterSubmit)
    removed = threading.Event()

    def work(i: int, free: Callable[[], None]) -> dict[str, int]:
        if i == 1:
            running.set()
            assert removed.wait(10), "never reaped"
            time.sleep(0.2)  # returns well after the stop's first clean-up round
        returned.append(i)
        return {"i": i}

    with pytest.raises(KeyboardInterrupt):
        run_pool(list(range(4)), work, 2, cleanup=removed.set)
    assert 1 in returned  # the pool waited for it before the stop propagated
