"""Golden tables: a check named under `varies` may come out pass or fail, and nothing else; every other check
must match exactly."""

from __future__ import annotations

from typing import Any

from tests.harnesses.golden import differences


def table(timing: str, outcome: str) -> dict[str, Any]:
    checks = {"calls.timing": timing, "outcome.final_answer": outcome}
    return {
        "version": "1",
        "scenarios": {"stream_cut": {"verdict": "fail", "execution": "exited", "normalize": "ok", "checks": checks}},
    }


def test_a_varying_check_may_flip_between_pass_and_fail_only() -> None:
    golden = {**table("pass", "pass"), "varies": {"stream_cut / calls.timing": "seen both ways"}}
    assert differences(golden, table("fail", "pass")) == []
    assert differences(golden, table("error", "pass")) == ["stream_cut / calls.timing: golden pass, now error"]
    # Only the named check varies: its neighbour still has to match.
    assert differences(golden, table("pass", "fail")) == ["stream_cut / outcome.final_answer: golden pass, now fail"]


def test_without_varies_a_flip_is_a_difference() -> None:
    assert differences(table("pass", "pass"), table("fail", "pass")) == [
        "stream_cut / calls.timing: golden pass, now fail"
    ]


def test_a_verdict_varies_only_where_named() -> None:
    passed, failed = table("pass", "pass"), table("fail", "pass")
    passed["scenarios"]["stream_cut"]["verdict"] = "pass"
    golden = {**passed, "varies": {"stream_cut / calls.timing": "a race", "stream_cut / verdict": "with calls.timing"}}
    assert differences(golden, failed) == []
    del golden["varies"]["stream_cut / verdict"]
    assert differences(golden, failed) == ["stream_cut: verdict golden 'pass', now 'fail'"]
    errored = table("pass", "pass")
    errored["scenarios"]["stream_cut"]["verdict"] = "error"
    golden["varies"]["stream_cut / verdict"] = "with calls.timing"
    assert differences(golden, errored) == ["stream_cut: verdict golden 'pass', now 'error'"]
