"""Work taken off an episode's wait: pods set up ahead (ahead.py) and normalizer children started early."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, cast

import pytest

from orchestrator.ahead import PodsAhead
from orchestrator.episode import EpisodePlan
from orchestrator.harnesses.isolated import NormalizeBudget, Normalizer
from orchestrator.paths import EpisodePaths
from orchestrator.runtime import PodSpec
from tests.fakes.runtime import FakePod, FakeRuntime, as_runtime
from tests.unit.harnesses.test_hostile_stores import Hostile


def _planners(tmp: Path, n: int, skipped: frozenset[int] = frozenset()) -> list[Any]:
    def plan(i: int) -> EpisodePlan:
        paths = EpisodePaths(tmp / f"ep{i}")
        paths.root.mkdir()
        spec = None if i in skipped else cast(PodSpec, f"p{i}")
        return EpisodePlan(cast(Any, None), cast(Any, None), paths, "r", f"e{i}", "", {}, 1.0, "", {}, spec)

    return [lambda i=i: plan(i) for i in range(n)]


def test_the_next_pod_is_set_up_once_a_harness_started_and_taken_by_its_episode(tmp_path: Path) -> None:
    engine = FakeRuntime()
    with PodsAhead(as_runtime(engine), _planners(tmp_path, 3)) as ahead:
        plan, ready = ahead.begin(0)
        assert plan.episode_id == "e0" and ready is None  # nothing ahead yet: the episode sets its pod up
        assert engine.up == []
        ahead.set_up_next()  # episode 0's harness started
        plan, ready = ahead.begin(1)
        assert plan.episode_id == "e1" and ready is not None
        got = ready()
        assert got is not None and got.pod == FakePod("pod p1")
        assert engine.up == ["p1"]
        with got.stack:  # the episode removes it
            pass
    assert engine.removed == ["p1"]


def test_a_pod_set_up_for_an_episode_that_never_begins_is_removed(tmp_path: Path) -> None:
    engine = FakeRuntime()
    with PodsAhead(as_runtime(engine), _planners(tmp_path, 3)) as ahead:
        ahead.begin(0)
        ahead.set_up_next()
        deadline = time.monotonic() + 30
        while not engine.up and time.monotonic() < deadline:  # the run stops only once it is set up
            time.sleep(0.01)
    assert engine.up == ["p1"] and engine.removed == ["p1"]
    assert not (tmp_path / "ep2").exists()


def test_a_pod_that_cannot_be_set_up_ahead_is_its_episodes_error(tmp_path: Path) -> None:
    engine = FakeRuntime(failing=frozenset({"p1"}))
    with PodsAhead(as_runtime(engine), _planners(tmp_path, 2)) as ahead:
        ahead.begin(0)
        ahead.set_up_next()
        _, ready = ahead.begin(1)
        assert ready is not None
        with pytest.raises(RuntimeError, match="no pod p1"):
            ready()
    # Set up once more before giving up, as an episode does itself; the first failure kept beside it.
    assert (tmp_path / "ep1" / "pod-setup-error-1.txt").is_file()
    assert engine.up == [] and engine.removed == []


def test_a_run_that_stops_sets_up_no_more_pods(tmp_path: Path) -> None:
    engine = FakeRuntime()
    with PodsAhead(as_runtime(engine), _planners(tmp_path, 3)) as ahead:
        ahead.begin(0)
    ahead.set_up_next()  # a harness that started as the run stopped
    assert engine.up == [] and not (tmp_path / "ep1").exists()


def test_a_skipped_episode_gets_no_pod(tmp_path: Path) -> None:
    engine = FakeRuntime()
    with PodsAhead(as_runtime(engine), _planners(tmp_path, 2, skipped=frozenset({1}))) as ahead:
        ahead.begin(0)
        ahead.set_up_next()
        _, ready = ahead.begin(1)
        assert ready is not None and ready() is None
    assert engine.up == []


def test_a_normalizer_started_early_normalizes_when_given_its_input(tmp_path: Path) -> None:
    child = Normalizer(Hostile({"do": "ok"}))
    child.start()
    try:
        assert child.run(tmp_path) == {"schema": "probe-rollout/v1"}
    finally:
        child.close()


def test_a_normalizer_never_given_its_input_is_killed(tmp_path: Path) -> None:
    child = Normalizer(Hostile({"do": "ok"}))
    child.start()
    pid = child._proc.pid if child._proc else 0
    child.close()
    with pytest.raises(ProcessLookupError):  # ended and reaped
        os.kill(pid, 0)


def test_a_started_normalizer_keeps_its_time_budget(tmp_path: Path) -> None:
    child = Normalizer(Hostile({"do": "hang"}), NormalizeBudget(seconds=3))
    child.start()
    try:
        with pytest.raises(Exception, match=r"time budget \(3s\)"):
            child.run(tmp_path)
    finally:
        child.close()


def test_normalizers_are_forked_from_one_server_that_imported_the_harnesses(tmp_path: Path) -> None:
    # A fresh interpreter per episode spent ~0.7 s of CPU importing; the children share one server's imports.
    children = [Normalizer(Hostile({"do": "ok"})), Normalizer(Hostile({"do": "ok"}))]
    try:
        for child in children:
            child.start()
        parents = {
            Path(f"/proc/{c._proc.pid if c._proc else 0}/stat").read_text().rsplit(")", 1)[1].split()[1]
            for c in children
        }
        assert len(parents) == 1 and parents != {str(os.getpid())}
        assert all(c.run(tmp_path) == {"schema": "probe-rollout/v1"} for c in children)
    finally:
        for child in children:
            child.close()


def test_pods_are_set_up_ahead_in_the_order_episodes_begin_in(tmp_path: Path) -> None:
    # With --jobs N the long episodes begin first (parallel.long_first): the pod set up ahead is the next one in
    # that order, not in the grid's.
    engine = FakeRuntime()
    with PodsAhead(as_runtime(engine), _planners(tmp_path, 4), order=[2, 0, 3, 1]) as ahead:
        ahead.begin(2)
        for index in (0, 3):  # each begins once the harness before it started
            ahead.set_up_next()
            plan, ready = ahead.begin(index)
            assert plan.episode_id == f"e{index}" and ready is not None
            got = ready()
            assert got is not None and got.pod == FakePod(f"pod p{index}")
            with got.stack:
                pass
    assert engine.up == ["p0", "p3"]
