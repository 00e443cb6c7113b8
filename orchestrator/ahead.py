"""Pods set up ahead: the next episode's pod (proxy up to ready) is set up while a harness runs.

One background thread sets up at most one pod at a time, in the order episodes begin in, each only once a harness
has started; an episode that begins takes its pod if it was set up (waiting if it is being set up) or sets it up
itself.
Pods never taken (a stopped run) are removed when the run's block ends, after their set-up has returned.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from types import TracebackType
from typing import Any

import structlog

from orchestrator.episode import EpisodePlan, PodReady, set_up_ahead
from orchestrator.runtime import PodRuntime

log = structlog.get_logger(__name__)

__all__ = ["PodsAhead"]


class _Ahead:
    def __init__(self, plan: Future[EpisodePlan], pod: Future[PodReady | None]) -> None:
        self.plan = plan
        self.pod = pod
        self.claimed = False  # its episode took the pod: removing it is the episode's business

    def claim(self) -> PodReady | None:
        ready = self.pod.result()
        self.claimed = True
        return ready


class PodsAhead:
    """Plans and pods of the episodes of one run, by grid index, set up one ahead of the episodes that run."""

    def __init__(
        self,
        engine: PodRuntime,
        planners: Sequence[Callable[[], EpisodePlan]],
        order: Sequence[int] | None = None,
    ) -> None:
        self._engine = engine
        self._planners = planners
        self._order = list(range(len(planners))) if order is None else list(order)  # the order episodes begin in
        self._lock = threading.Lock()
        self._begun: set[int] = set()
        self._ahead: dict[int, _Ahead] = {}
        self._every: list[_Ahead] = []
        self._closed = False
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pod-ahead")

    def __enter__(self) -> PodsAhead:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def begin(self, index: int) -> tuple[EpisodePlan, Callable[[], PodReady | None] | None]:
        """Episode `index` begins: its plan, and where its pod set up ahead comes from (None: set it up now)."""
        with self._lock:
            self._begun.add(index)
            ahead = self._ahead.pop(index, None)
        if ahead is None:
            return self._planners[index](), None
        return ahead.plan.result(), ahead.claim

    def set_up_next(self) -> None:
        """A harness started: set up the pod of the first episode that has not begun and has none yet."""
        with self._lock:
            if self._closed:
                return
            index = next((i for i in self._order if i not in self._begun and i not in self._ahead), None)
            if index is None:
                return
            plan: Future[EpisodePlan] = self._pool.submit(self._planners[index])
            pod: Future[PodReady | None] = self._pool.submit(self._pod_of, plan)
            self._ahead[index] = _Ahead(plan, pod)
            self._every.append(self._ahead[index])

    def _pod_of(self, plan: Future[EpisodePlan]) -> PodReady | None:
        if self._closed:  # the run stopped before this set-up began: the episode never plays
            return None
        return set_up_ahead(self._engine, plan.result())

    def close(self) -> None:
        """Wait until no set-up runs any more (a second Ctrl-C included), then remove every pod set up and never
        taken. Once this returns nothing of ours creates engine objects, so a run's clean-up after it is final."""
        with self._lock:
            self._closed = True
            left = list(self._every)
            self._ahead.clear()
        futures: list[Future[Any]] = [f for a in left for f in (a.plan, a.pod)]
        while True:
            try:
                wait_futures(futures)
                break
            except KeyboardInterrupt:  # the pods being set up must still be removed
                continue
        for a in left:
            if a.claimed or a.pod.cancelled() or a.pod.exception() is not None:
                continue
            if (ready := a.pod.result()) is not None:
                log.debug("removing a pod set up ahead for an episode that did not play")
                ready.stack.close()
        self._pool.shutdown(wait=True)
