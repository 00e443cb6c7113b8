"""Labels: every object carries the run label; the reserved namespace cannot be spoofed."""

from __future__ import annotations

import pytest

from orchestrator.runtime import create_labels


def test_run_label_and_extras() -> None:
    labels = create_labels("r1", episode="e1")
    assert labels["harness-probe.run"] == "r1"
    assert labels["harness-probe.episode"] == "e1"
    assert "harness-probe.version" in labels


def test_reserved_namespace_rejected() -> None:
    with pytest.raises(ValueError, match="reserved"):
        create_labels("r1", **{"harness-probe.run": "x"})
