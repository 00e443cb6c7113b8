"""Misreporting modes: each is exactly one intended lie on top of the honest rollout, and still schema-valid."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from probe_reference.modes import HOSTILE, MISREPORTING, MODES, OWN_TURN, WRONG_ANSWER

from tests.unit.reference_agent.fake_provider import Received, Reply, completion, json_reply, serve, usage
from tests.unit.reference_agent.helpers import run_agent, validate_schema

TOOL = ("call_1", "bash", json.dumps({"command": "printf hi; exit 3"}))
RATE_LIMITED = {"error": {"message": "slow down", "type": "rate_limit_error", "code": "rate_limited"}}
ANSWER = "The command printed hi."
Rollout = dict[str, Any]


def script() -> list[Reply]:
    """Step 1: a 429, then a tool call; step 2: the final answer. Calls mc-1 (429), mc-2, mc-3."""
    return [
        json_reply(429, RATE_LIMITED, {"retry-after-ms": "1"}),
        completion("chatcmpl-1", tool_calls=[TOOL], usage=usage(11, 5, reasoning=2, cached=0)),
        completion("chatcmpl-2", content=ANSWER, usage=usage(23, 7)),
    ]


def run(tmp_path: Path, mode: str) -> tuple[Rollout, list[Received]]:
    with serve(script()) as provider:
        code, rollout = run_agent(provider.url, tmp_path, "--mode", mode, honest=mode == "honest")
    assert code == 0 and not provider.violations and provider.remaining == 0
    return rollout, provider.received


@pytest.fixture(scope="module")
def honest_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Rollout, list[Received]]:
    rollout, received = run(tmp_path_factory.mktemp("honest"), "honest")
    # The shape every expectation below starts from.
    assert [c["model_call_id"] for c in rollout["model_calls"]] == ["mc-1", "mc-2", "mc-3"]
    assert rollout["model_calls"][0]["status_code"] == 429
    assert [s["model_call_refs"] for s in rollout["steps"]] == [["mc-1", "mc-2"], ["mc-3"]]
    assert [t["tool_call_id"] for t in rollout["tool_calls"]] == ["call_1"]
    assert rollout["outcome"]["final_answer"] == ANSWER
    return rollout, received


def _drop_failed_attempt(r: Rollout) -> None:
    del r["model_calls"][0]
    r["steps"][0]["model_call_refs"] = ["mc-2"]
    r["invocations"][0]["model_call_refs"] = ["mc-2", "mc-3"]


def _wrong_tokens(r: Rollout) -> None:
    assert r["model_calls"][0]["token_stats"]["total"] is None  # the 429 has no usage: the first known is mc-2
    r["model_calls"][1]["token_stats"]["total"] = 17


def _alter_tool_output(r: Rollout) -> None:
    r["tool_calls"][0]["output"] = "hi (edited)"
    conversation = r["invocations"][0]["conversation"]
    assert conversation[3] == {"role": "tool", "tool_call_id": "call_1", "content": "hi"}
    conversation[3]["content"] = "hi (edited)"


def _drop_tool_record(r: Rollout) -> None:
    r["tool_calls"] = []


def _lost_ownership(r: Rollout) -> None:
    r["model_calls"][0]["invocation_id"] = None
    r["invocations"][0]["model_call_refs"] = ["mc-2", "mc-3"]


def _wrong_answer_report(r: Rollout) -> None:
    r["outcome"]["final_answer"] = WRONG_ANSWER


def _wrong_wait(r: Rollout) -> None:
    assert r["model_calls"][0]["retry_delay_ms"] == 1.0  # the SDK's planned wait: retry-after-ms 1
    r["model_calls"][0]["retry_delay_ms"] = 10_001.0


def _duplicate_attempt(r: Rollout) -> None:
    r["model_calls"].insert(1, {**copy.deepcopy(r["model_calls"][0]), "model_call_id": "mc-1-dup"})
    r["steps"][0]["model_call_refs"] = ["mc-1", "mc-1-dup", "mc-2"]
    r["invocations"][0]["model_call_refs"] = ["mc-1", "mc-1-dup", "mc-2", "mc-3"]


# The intended difference, written out by hand for the honest rollout of the script above.
EDITS: dict[str, Callable[[Rollout], None]] = {
    "drop_failed_attempt": _drop_failed_attempt,
    "wrong_tokens": _wrong_tokens,
    "alter_tool_output": _alter_tool_output,
    "drop_tool_record": _drop_tool_record,
    "lost_ownership": _lost_ownership,
    "wrong_answer_report": _wrong_answer_report,
    "duplicate_attempt": _duplicate_attempt,
    "wrong_wait": _wrong_wait,
}
# Modes whose lie needs another script than the one above (an error outcome, cut-off arguments, a stream), or that
# also change what the agent does on the wire: each has a test of its own below.
OWN_TESTS = {"swallow_error", "repair_arguments", "stream_mislabel", "impatient", "unmarked_turn"}


def test_every_misreporting_mode_is_covered() -> None:
    assert set(MISREPORTING) == set(EDITS) | OWN_TESTS
    assert set(HOSTILE) == {
        "hostile-network", "hostile-cpu", "hostile-fork", "hostile-version",
        "hostile-files", "hostile-sparse", "hostile-marker", "hostile-deep-body",
        "hostile-body-flood", "hostile-chunked-body",
        "hostile-surrogate", "hostile-atif-calls", "hostile-atif-strict", "hostile-deep-tree",
    }  # fmt: skip
    assert set(MODES) == {"honest", "own_turn", "hang", *EDITS, *OWN_TESTS, *HOSTILE}


@pytest.mark.parametrize("mode", sorted(EDITS))
def test_transform_is_exactly_the_intended_lie(honest_run: tuple[Rollout, list[Received]], mode: str) -> None:
    honest, _ = honest_run
    before = copy.deepcopy(honest)
    expected = copy.deepcopy(honest)
    EDITS[mode](expected)
    assert expected != honest
    lied: Any = MODES[mode].transform(honest)
    assert lied == expected
    assert honest == before, "the transformation must not touch its input"
    validate_schema(lied)


@pytest.mark.parametrize("mode", sorted(EDITS))
def test_mode_run_lies_only_in_its_report(
    honest_run: tuple[Rollout, list[Received]], tmp_path: Path, mode: str
) -> None:
    """End to end: the same script, the same requests on the wire; the rollout is the honest one, edited."""
    honest, honest_received = honest_run
    lied, received = run(tmp_path, mode)
    assert [(r.path, r.body) for r in received] == [(r.path, r.body) for r in honest_received]
    expected = copy.deepcopy(honest)
    EDITS[mode](expected)
    assert scrub(lied) == scrub(expected)
    assert mode not in json.dumps(lied) and "extensions" not in lied


def scrub(rollout: Rollout) -> Rollout:
    """Drop what differs between two runs of one script: times and the run's own random ids."""
    text = json.dumps(rollout)
    text = text.replace(rollout["rollout_id"], "<rollout>")
    text = text.replace(rollout["invocations"][0]["invocation_id"], "<invocation>")
    scrubbed: Rollout = json.loads(text)
    for call in scrubbed["model_calls"]:
        call["started_at"] = call["completed_at"] = "<time>"
    for step in scrubbed["steps"]:
        step["timestamp"] = "<time>"
    return scrubbed


@pytest.mark.parametrize(
    ("mode", "strip"),
    [
        ("drop_failed_attempt", _drop_failed_attempt),  # no non-2xx call left
        ("duplicate_attempt", _drop_failed_attempt),  # no failed call left
        ("drop_tool_record", _drop_tool_record),  # no tool call
        ("alter_tool_output", _drop_tool_record),  # no tool output
    ],
)
def test_nothing_to_lie_about_leaves_the_rollout(
    honest_run: tuple[Rollout, list[Received]], mode: str, strip: Callable[[Rollout], None]
) -> None:
    rollout = copy.deepcopy(honest_run[0])
    strip(rollout)
    assert MODES[mode].transform(copy.deepcopy(rollout)) == rollout


def test_wrong_answer_differs_even_from_itself(honest_run: tuple[Rollout, list[Received]]) -> None:
    rollout = copy.deepcopy(honest_run[0])
    rollout["outcome"]["final_answer"] = WRONG_ANSWER
    lied: Any = MODES["wrong_answer_report"].transform(rollout)
    assert lied["outcome"]["final_answer"] not in (WRONG_ANSWER, None)


def test_swallow_error_leaves_an_error_outcome_that_names_nothing(honest_run: tuple[Rollout, list[Received]]) -> None:
    failed = copy.deepcopy(honest_run[0])
    failed["outcome"] = {
        "final_answer": None,
        "status": "error",
        "failure_kind": "model_error",
        "failure_reason": "429",
    }
    lied: Any = MODES["swallow_error"].transform(failed)
    assert lied["outcome"] == {**failed["outcome"], "failure_kind": "error", "failure_reason": "the run did not finish"}
    assert MODES["swallow_error"].transform(honest_run[0]) == honest_run[0]  # a completed run: nothing to hide


def test_repair_arguments_turns_cut_off_arguments_into_the_object_a_lenient_parser_makes(
    honest_run: tuple[Rollout, list[Received]],
) -> None:
    cut = copy.deepcopy(honest_run[0])
    text = '{"command":"printf hi; exit 3'
    cut["tool_calls"][0]["arguments"] = text
    cut["invocations"][0]["conversation"][2]["tool_calls"][0]["arguments"] = text
    lied: Any = MODES["repair_arguments"].transform(cut)
    repaired = {"command": "printf hi; exit 3"}
    assert lied["tool_calls"][0]["arguments"] == repaired
    assert lied["invocations"][0]["conversation"][2]["tool_calls"][0]["arguments"] == repaired
    assert MODES["repair_arguments"].transform(honest_run[0]) == honest_run[0]


def test_stream_mislabel_lies_only_about_streamed_runs(honest_run: tuple[Rollout, list[Received]]) -> None:
    mode = MODES["stream_mislabel"]
    assert mode.transform(honest_run[0]) == honest_run[0] and mode.stream_transform is not None
    lied: Any = mode.stream_transform(honest_run[0])
    assert [c["finish_reason"] for c in lied["model_calls"]] == [None, "stop", "stop"]


def test_impatient_retries_at_once_and_records_the_wait_it_took(tmp_path: Path) -> None:
    slow_down = json_reply(429, RATE_LIMITED, {"retry-after": "3", "retry-after-ms": "3000"})
    script = [slow_down, completion("chatcmpl-1", content=ANSWER, usage=usage(11, 5))]
    with serve(script) as provider:
        code, rollout = run_agent(provider.url, tmp_path, "--mode", "impatient")
    assert code == 0 and not provider.violations and len(provider.received) == 2
    assert rollout["model_calls"][0]["retry_delay_ms"] == 200.0  # what it waited, not the 3 s asked
    assert [s["model_call_refs"] for s in rollout["steps"]] == [["mc-1", "mc-2"]]


def test_unmarked_turn_sends_a_turn_of_its_own_and_records_it_as_the_models(tmp_path: Path) -> None:
    with serve([completion("chatcmpl-1", content=ANSWER, usage=usage(11, 5))]) as provider:
        code, rollout = run_agent(provider.url, tmp_path, "--mode", "unmarked_turn")
    assert code == 0
    sent = provider.received[0].body["messages"]
    assert sent[2] == {"role": "assistant", "content": OWN_TURN}
    recorded = rollout["invocations"][0]["conversation"][2]
    assert recorded == {"role": "assistant", "content": OWN_TURN}  # no origin: harness


def test_own_turn_sends_the_same_turn_and_records_it_as_its_own(tmp_path: Path) -> None:
    with serve([completion("chatcmpl-1", content=ANSWER, usage=usage(11, 5))]) as provider:
        code, rollout = run_agent(provider.url, tmp_path, "--mode", "own_turn", honest=True)
    assert code == 0
    assert provider.received[0].body["messages"][2] == {"role": "assistant", "content": OWN_TURN}
    assert rollout["invocations"][0]["conversation"][2] == {
        "role": "assistant",
        "content": OWN_TURN,
        "origin": "harness",
    }
