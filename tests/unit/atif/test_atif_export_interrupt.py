"""Ctrl-C part-way through `export`: what the export wrote is removed, never left as a half-written episode."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from orchestrator.atif import files, rollout_to_atif
from orchestrator.audit import find_episodes
from orchestrator.cli import app
from tests.unit.checks.conftest import FIXTURES


def _run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    for name in ("tool_success", "retry_429", "context_compaction"):
        shutil.copytree(FIXTURES / name, run / "reference" / name)
    return run


@pytest.fixture
def interrupt_second_episode(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Ctrl-C as the second episode is converted: the first is written by then."""
    calls: list[int] = []
    real = rollout_to_atif

    def convert(*args: Any, **kwargs: Any) -> dict[str, Any]:
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(files, "rollout_to_atif", convert)
    return calls


def test_an_interrupted_export_removes_its_output_and_propagates(
    tmp_path: Path, interrupt_second_episode: list[int]
) -> None:
    run, out = _run_dir(tmp_path), tmp_path / "atif"
    with pytest.raises(KeyboardInterrupt):
        files.export_atif(find_episodes(run), out)
    assert len(interrupt_second_episode) == 2
    assert not out.exists()


def test_an_interrupted_export_command_exits_130_and_says_the_output_was_removed(
    tmp_path: Path, interrupt_second_episode: list[int]
) -> None:
    run, out = _run_dir(tmp_path), tmp_path / "atif"
    res = CliRunner().invoke(app, ["export", str(run), "-o", str(out)])
    assert res.exit_code == 130, res.output
    assert len(interrupt_second_episode) == 2
    assert f"harness-probe: export interrupted; the partial output {out} was removed" in res.output
    assert not out.exists()
