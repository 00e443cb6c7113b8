"""One episode's crash while being checked is that episode's `error` (traceback beside it), never the run's end."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any, cast

import pytest

import orchestrator.episode as episode
import orchestrator.verdict as verdict
from orchestrator.evidence import load_json
from orchestrator.harnesses import get_harness
from orchestrator.paths import EpisodePaths
from orchestrator.runtime import PodSpec
from orchestrator.runtime.collect import Collection, CollectLimits, Finding
from orchestrator.scenarios import load_scenario
from tests.fakes.runtime import FakePod, FakeRuntime, as_runtime


def test_a_recursion_error_while_checking_is_this_episodes_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def deep(*_: Any) -> Any:
        raise RecursionError("maximum recursion depth exceeded")

    # The episode imports these from orchestrator.verdict when it checks (the suite loads them ahead).
    monkeypatch.setattr(
        verdict, "normalize_native", lambda *_: ({"schema": "probe-rollout/v1"}, {"status": "ok", "message": None})
    )
    monkeypatch.setattr(verdict, "judge", deep)
    paths = EpisodePaths(tmp_path / "ep")
    paths.root.mkdir()
    collection = Collection()
    collection.note(Finding("symlink", "/home/probe/x", "not copied"))
    execution = {"status": "exited", "exit_code": 0, "seconds": 1.0, "timeout_seconds": 60.0, "error": None}
    result = episode._finish(
        paths,
        get_harness("reference"),
        load_scenario("tool_success"),
        "r",
        "e",
        episode.now_iso(),
        execution,
        True,
        collection,
    )
    assert result["verdict"] == "error"
    assert "RecursionError" in result["execution"]["error"]
    assert "RecursionError" in (paths.root / "check-error.txt").read_text()
    saved = load_json(paths.result, "scenario-result/v1")
    assert saved["collection"]["findings"][0]["kind"] == "symlink"


def test_the_witness_is_read_under_the_collection_s_byte_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # What a run collected under a raised --collect-max-bytes, it reads: the cap reaches the witness reader.
    seen: list[int] = []

    def collect(*args: Any) -> Any:
        seen.append(args[4])
        raise RuntimeError("enough")

    monkeypatch.setattr(
        verdict, "normalize_native", lambda *_: ({"schema": "probe-rollout/v1"}, {"status": "ok", "message": None})
    )
    monkeypatch.setattr(verdict, "collect_evidence", collect)
    execution = {"status": "exited", "exit_code": 0, "seconds": 1.0, "timeout_seconds": 60.0, "error": None}
    for i, cap in enumerate([1 << 30, 1000]):
        paths = EpisodePaths(tmp_path / f"ep{i}")
        paths.root.mkdir()
        collection = Collection(CollectLimits(max_bytes=cap))
        scenario = load_scenario("tool_success")
        episode._finish(
            paths, get_harness("reference"), scenario, "r", "e", episode.now_iso(), execution, True, collection
        )
    assert seen == [1 << 30, 1000]


def test_nan_is_never_written(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="Out of range float"):
        episode.write_json(tmp_path / "x.json", {"x": float("nan")})


def test_a_pod_set_up_that_fails_once_is_set_up_again_and_the_failure_kept(tmp_path: Path) -> None:
    paths = EpisodePaths(tmp_path / "ep")
    paths.root.mkdir()
    flaky = FakeRuntime(failures=1)
    with ExitStack() as stack:
        pod: object = episode._set_up_pod(stack, as_runtime(flaky), cast(PodSpec, None), paths)
        assert pod == FakePod("pod None")
    assert (flaky.entered, flaky.exited) == (1, 1)
    assert "already in use" in (paths.root / "pod-setup-error-1.txt").read_text()


def test_a_pod_set_up_that_fails_twice_is_the_episodes_error(tmp_path: Path) -> None:
    paths = EpisodePaths(tmp_path / "ep")
    paths.root.mkdir()
    with pytest.raises(RuntimeError, match="already in use"), ExitStack() as stack:
        episode._set_up_pod(stack, as_runtime(FakeRuntime(failures=2)), cast(PodSpec, None), paths)
