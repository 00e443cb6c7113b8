"""Hermes Agent 0.19.0 through the whole catalogue in real containers: its verdict table equals the golden file.

Regenerate the golden after a deliberate change (see tests/harnesses/golden.py):
    .venv/bin/harness-probe run -H hermes -o /tmp/hermes-run
    .venv/bin/python -m tests.harnesses.golden hermes /tmp/hermes-run
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from orchestrator.images import IMAGES_DIR
from tests.harnesses.golden import assert_matches_golden, run_catalogue
from tests.integration.conftest import Images, engine, images

pytestmark = [pytest.mark.docker, pytest.mark.harness]
__all__ = ["engine", "images"]  # fixtures, re-exported so pytest finds them here

HARNESS = "hermes"


@pytest.fixture(scope="module")
def run(images: Images, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    out = tmp_path_factory.mktemp(HARNESS) / "out"
    return out, run_catalogue(HARNESS, out)


def test_verdict_table_equals_the_golden(run: tuple[Path, int]) -> None:
    assert_matches_golden(*run, HARNESS)


def test_runtime_records_the_pinned_image(run: tuple[Path, int]) -> None:
    out, _ = run
    lock = hashlib.sha256((IMAGES_DIR / HARNESS / "requirements.lock").read_bytes()).hexdigest()
    for runtime_file in sorted(out.glob(f"{HARNESS}/*/runtime.json")):
        harness = json.loads(runtime_file.read_text())["harness"]
        assert harness["version"] == "Hermes Agent v0.19.0 (2026.7.20)"
        assert harness["image_id"].startswith("sha256:")
        assert harness["files"]["requirements.lock"] == lock
