"""An audit's memory stays flat in its episodes: an episode leaves behind its name and where its record lies."""

from __future__ import annotations

import os
import shutil
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

import orchestrator.audit as audit_mod
from orchestrator.audit import audit, episode_names
from orchestrator.report.summary import SummaryBuilder
from tests.unit.checks.conftest import FIXTURES

N = 10
# Per episode beyond the first N, what the audit's traced peak may grow by. Measured: ~1.4 KiB (a name, an index
# entry, a suite line, one folder entry of the input walk); an episode's result kept in memory costs ~33 KiB (checked
# below, so the bound can fail). The bound sits between with room to spare on both sides.
PER_EPISODE = 4096


def _saved(root: Path, n: int) -> Path:
    for i in range(n):
        shutil.copytree(FIXTURES / "tool_success", root / "reference" / f"ep{i:03d}")
    return root


def _peak(src: Path, out: Path) -> int:
    tracemalloc.start()
    try:
        assert audit(src, out).exit_code == 0
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_audit_peak_memory_does_not_grow_with_the_episodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    small_src, large_src = _saved(tmp_path / "small", N), _saved(tmp_path / "large", 4 * N)
    audit(_saved(tmp_path / "warm", 1), tmp_path / "warm-out")  # schemas and validators built once, untraced
    small = _peak(small_src, tmp_path / "small-out")
    large = _peak(large_src, tmp_path / "large-out")
    bound = 3 * N * PER_EPISODE
    assert large - small < bound, (small, large)

    # The same measure catches an audit that keeps each episode's result (as a list of results would).
    kept: list[dict[str, Any]] = []
    add = SummaryBuilder.add

    def keeping(self: SummaryBuilder, result: dict[str, Any]) -> None:
        kept.append(result)
        add(self, result)

    monkeypatch.setattr(SummaryBuilder, "add", keeping)
    leaky = _peak(large_src, tmp_path / "leaky-out")
    assert len(kept) == 4 * N
    assert leaky - small > bound, (small, leaky)


def test_episode_names_are_sorted_real_folders_only(tmp_path: Path) -> None:
    src = _saved(tmp_path / "src", 3)
    (src / "reference" / "ep001" / "witness.jsonl").unlink()  # a rollout alone still makes an episode
    (src / "reference" / "ep002" / "scenario.json").unlink()  # no scenario: not an episode
    (src / "reference" / "zz-link").symlink_to(src / "reference" / "ep000")
    (src / "other").symlink_to(src / "reference")
    (src / "reference" / "notes.txt").write_text("not a folder")
    assert episode_names(src) == [("reference", "ep000"), ("reference", "ep001")]
    assert [(h, s, p) for h, s, p in audit_mod.find_episodes(src)] == [
        ("reference", "ep000", src / "reference" / "ep000"),
        ("reference", "ep001", src / "reference" / "ep001"),
    ]
    assert os.path.islink(src / "other")
