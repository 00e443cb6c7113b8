"""Codex CLI under rootful Podman: the same verdict table as its golden (recorded under Docker), nothing left.

A real harness's verdicts do not depend on the runtime: what a runtime cannot avoid changing is recorded in
runtime.json, never in a verdict.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harnesses.golden import assert_matches_golden, run_catalogue
from tests.integration.conftest import Images, engine, images
from tests.integration.runtimes import podman_labelled, podman_missing

# Skipped in the test, not by a skipif mark: the mark's name would make `pytest tests/harnesses -k pi` select this.
pytestmark = [pytest.mark.docker, pytest.mark.harness]
__all__ = ["engine", "images"]  # fixtures, re-exported so pytest finds them here

HARNESS = "codex"


def test_codex_under_podman_matches_its_golden(images: Images, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if (missing := podman_missing()) is not None:
        pytest.skip(missing)
    monkeypatch.setenv("HARNESS_PROBE_RUNTIME", "podman")
    monkeypatch.delenv("CONTAINER_HOST", raising=False)
    out = tmp_path / "out"
    code = run_catalogue(HARNESS, out)
    assert_matches_golden(out, code, HARNESS)
    runtime = json.loads((out / HARNESS / "tool_success" / "runtime.json").read_text())
    assert runtime["engine"]["runtime"] == "podman"
    run_id = json.loads((out / "summary.json").read_text())["run_id"]
    assert podman_labelled("unix:///run/podman/podman.sock", run_id) == []
