"""One episode's crash while being checked is that episode's `error` (traceback beside it), never the run's end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import orchestrator.episode as episode
from orchestrator.evidence import load_json
from orchestrator.harnesses import get_harness
from orchestrator.paths import EpisodePaths
from orchestrator.runtime.collect import Collection, Finding
from orchestrator.scenarios import load_scenario


def test_a_recursion_error_while_checking_is_this_episodes_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def deep(*_: Any) -> Any:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(
        episode, "normalize_native", lambda *_: ({"schema": "probe-rollout/v1"}, {"status": "ok", "message": None})
    )
    monkeypatch.setattr(episode, "judge", deep)
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


def test_nan_is_never_written(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="Out of range float"):
        episode.write_json(tmp_path / "x.json", {"x": float("nan")})
