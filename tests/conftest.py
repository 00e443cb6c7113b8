"""Shared test set-up: the repository root, schema validation of real outputs, a clean environment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _clean_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    # Provider settings leaking in from a developer's shell must not steer what the tests talk to.
    for var in list(os.environ):
        if var.startswith(("OPENAI_", "ANTHROPIC_")) or var in ("HARNESS_PROBE_LOG_FORMAT",):
            monkeypatch.delenv(var, raising=False)
