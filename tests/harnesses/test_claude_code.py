"""Claude Code 2.1.328 through the whole catalogue in real containers: its verdict table equals the golden file.

Regenerate the golden after a deliberate change (see tests/harnesses/golden.py):
    .venv/bin/harness-probe run -H claude-code -o /tmp/claude-code-run
    .venv/bin/python -m tests.harnesses.golden claude-code /tmp/claude-code-run
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from orchestrator.images import IMAGES_DIR
from tests.harnesses.golden import assert_matches_golden, results, run_catalogue
from tests.integration.conftest import Images, engine, images

pytestmark = [pytest.mark.docker, pytest.mark.harness]
__all__ = ["engine", "images"]  # fixtures, re-exported so pytest finds them here

HARNESS = "claude-code"


@pytest.fixture(scope="module")
def run(images: Images, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    out = tmp_path_factory.mktemp(HARNESS) / "out"
    return out, run_catalogue(HARNESS, out)


def test_verdict_table_equals_the_golden(run: tuple[Path, int]) -> None:
    assert_matches_golden(*run, HARNESS)


def test_runtime_records_the_pinned_image(run: tuple[Path, int]) -> None:
    out, _ = run
    lock = hashlib.sha256((IMAGES_DIR / HARNESS / "package-lock.json").read_bytes()).hexdigest()
    for runtime_file in sorted(out.glob(f"{HARNESS}/*/runtime.json")):
        harness = json.loads(runtime_file.read_text())["harness"]
        assert harness["version"] == "2.1.328 (Claude Code)"
        assert harness["image_id"].startswith("sha256:")
        assert harness["files"]["package-lock.json"] == lock
    rollout = json.loads((out / HARNESS / "tool_success" / "rollout.json").read_text())
    assert rollout["harness"] == {"name": HARNESS, "version": "2.1.328"}


def test_every_episode_ends_on_its_own(run: tuple[Path, int]) -> None:
    out, _ = run
    for name, r in results(out, HARNESS).items():
        assert r["execution"]["status"] == "exited", (name, r["execution"])
    # A withheld reply is given up at the byte watchdog (20 s), far inside the episode timeout.
    assert results(out, HARNESS)["harness_deadline"]["execution"]["seconds"] < 120


def test_only_the_scripted_provider_was_spoken_to(run: tuple[Path, int]) -> None:
    out, _ = run
    for episode in sorted((out / HARNESS).iterdir()):
        events = [json.loads(line) for line in (episode / "witness.jsonl").read_text().splitlines()]
        # No side requests (titles, quota, token counting), no lookups of other hosts (telemetry, updates).
        assert {e["kind"] for e in events if e["event"] == "attempt"} == {"model"}, episode.name
        assert {e["path"] for e in events if e["event"] == "attempt"} == {"/v1/messages?beta=true"}, episode.name
        assert [e for e in events if e["event"] in ("violation", "egress")] == [], episode.name
