"""gaps.none_voiding names the labels a gap voids at the end of its reason, where the reports read them back."""

from __future__ import annotations

from orchestrator.checks.model import REASON_CHARS
from orchestrator.report.findings import labels_of
from tests.unit.checks.conftest import load_episode


def test_the_labels_close_the_reason_once_each_whatever_the_detail() -> None:
    ep = load_episode("tool_success")
    detail = "the harness wrote (voids E9) here, and " + "x" * 5_000
    ep.rollout["gaps"].append({"code": "model_calls.usage_unreported", "detail": detail, "labels": ["E5", "E2", "E5"]})
    status, reasons = ep.evaluate()["gaps.none_voiding"]
    assert str(status) == "fail"
    (reason,) = reasons
    assert reason.endswith("(voids E2, E5)") and len(reason) < REASON_CHARS
    assert "characters left out" in reason  # the detail was bounded, not the labels
    # A `(voids ...)` in the harness's own detail is not a label list: only the reason's end is.
    assert labels_of({"id": "gaps.none_voiding", "status": "fail", "reasons": reasons}) == {"E2", "E5"}


def test_many_labels_are_read_back_from_a_long_reason() -> None:
    ep = load_episode("tool_success")
    labels = [f"E{n}" for n in range(1, 11)] * 200  # the schema allows any number, repeats included
    ep.rollout["gaps"].append({"code": "model_calls.usage_unreported", "detail": "d" * 1_500, "labels": labels})
    _, reasons = ep.evaluate()["gaps.none_voiding"]
    found = labels_of({"id": "gaps.none_voiding", "status": "fail", "reasons": reasons})
    assert found == {f"E{n}" for n in range(1, 11)}
