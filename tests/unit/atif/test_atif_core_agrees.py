"""Negative controls of issue 30 class 6: an ATIF export of a real captured episode whose core fields (what a Harbor
reader sees) are edited away from its extension fails the audit, with a reason naming the field; and class 10: an
honest NOOA or Stirrup round trip makes no tool record for a history call that never ran as a tool."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from orchestrator.atif import atif_to_rollout, export_atif, rollout_to_atif
from orchestrator.atif.agree import core_faults
from orchestrator.atif.core import as_object
from orchestrator.audit import audit
from orchestrator.checks import Evidence, Witness, run_checks, scope_of
from orchestrator.harnesses.mini_swe_agent_normalize import TRAJECTORY_NAME, normalize_trajectory
from tests.unit.checks.conftest import Episode, load_episode
from tests.unit.harnesses.captured import fixtures

Edit = Callable[[dict[str, Any]], None]


def _write(ep: Episode, root: Path) -> None:
    root.mkdir(parents=True)
    (root / "scenario.json").write_text(json.dumps(ep.scenario))
    (root / "rollout.json").write_text(json.dumps(ep.rollout))
    (root / "witness.jsonl").write_text("".join(json.dumps(e) + "\n" for e in ep.witness))
    (root / "markers").mkdir()
    for name, text in ep.markers.items():
        (root / "markers" / name).write_text(text)


def _exported(name: str, tmp_path: Path) -> tuple[Episode, Path]:
    """The captured episode exported to ATIF the way `harness-probe export` does: OUT/<harness>/<scenario>/."""
    harness, scenario = name.removeprefix("native:").split("/")
    ep = load_episode(name)
    _write(ep, tmp_path / "run" / harness / scenario)
    res = export_atif([(harness, scenario, tmp_path / "run" / harness / scenario)], tmp_path / "atif")
    assert res.skipped == []
    [traj] = res.written
    return ep, traj


def _agent(doc: dict[str, Any], with_tools: bool) -> dict[str, Any]:
    return next(
        s for s in doc["steps"] if s["source"] == "agent" and bool(s.get("tool_calls")) == with_tools and "metrics" in s
    )


def _metrics(doc: dict[str, Any]) -> None:
    _agent(doc, True)["metrics"]["prompt_tokens"] += 1000


def _final_metrics(doc: dict[str, Any]) -> None:
    doc["final_metrics"]["total_completion_tokens"] = 1


def _arguments(doc: dict[str, Any]) -> None:
    _agent(doc, True)["tool_calls"][0]["arguments"] = {"command": "rm -rf /"}


def _final_message(doc: dict[str, Any]) -> None:
    _agent(doc, False)["message"] = "Deleted everything, as asked."


def _function_name(doc: dict[str, Any]) -> None:
    _agent(doc, True)["tool_calls"][0]["function_name"] = "Write"


def _tool_call_id(doc: dict[str, Any]) -> None:
    # With its result's reference, as ATIF's rules require of a result: the history stays whole, under another id.
    step = _agent(doc, True)
    old, new = step["tool_calls"][0]["tool_call_id"], "toolu_invented"
    step["tool_calls"][0]["tool_call_id"] = new
    for result in step["observation"]["results"]:
        if result.get("source_call_id") == old:
            result["source_call_id"] = new


def _invented_answer(doc: dict[str, Any]) -> None:
    # An answer the run never gave (the provider failed it), as one last agent message that stands for no call.
    doc["steps"].append(
        {"step_id": len(doc["steps"]) + 1, "source": "agent", "message": "PROBE_DONE", "llm_call_count": 0}
    )
    doc["final_metrics"]["total_steps"] += 1


def _answer_argument(doc: dict[str, Any]) -> None:
    # Every argument value that says the answer, in the call that delivers it (NOOA's return_result, Stirrup's finish).
    calls = [s for s in doc["steps"] if s["source"] == "agent"][-1]["tool_calls"]
    for tc in calls:
        tc["arguments"] = json.loads(json.dumps(tc["arguments"]).replace('"PROBE_DONE"', '"NOT_DONE"'))


def _answer_text(doc: dict[str, Any]) -> None:
    last = [s for s in doc["steps"] if s["source"] == "agent"][-1]
    last["message"] = last["message"].replace("PROBE_DONE", "NOT_DONE")


# (episode, edit of the core field, where the reason must point, words it must say)
CONTROLS: dict[str, tuple[str, Edit, str, str]] = {
    "step metrics": ("native:claude-code/tool_failure", _metrics, ".metrics.prompt_tokens: ", "where the step's call"),
    "final_metrics": (
        "native:claude-code/tool_failure",
        _final_metrics,
        "$.final_metrics.total_completion_tokens: 1 where",
        "the extension's calls",
    ),
    "tool-call arguments": (
        "native:claude-code/tool_failure",
        _arguments,
        ".tool_calls[0].arguments: {'command': 'rm -rf /'} where",
        "the arguments of its tool record",
    ),
    "final agent message": (
        "native:claude-code/tool_failure",
        _final_message,
        ".message: the extension's outcome has final answer 'PROBE_DONE'",
        "the last agent step's message",
    ),
    "tool-call function name": (
        "native:claude-code/tool_failure",
        _function_name,
        ".tool_calls[0].function_name: 'Write' where its tool record's in the extension is 'Bash'",
        "tool record",
    ),
    "tool-call id": (
        "native:claude-code/tool_failure",
        _tool_call_id,
        ".tool_calls[0].tool_call_id: 'toolu_invented' where its tool record in the extension is",
        "tool record",
    ),
    "a final agent message where the outcome records no answer": (
        "native:claude-code/model_error",
        _invented_answer,
        ".message: the extension's outcome records no final answer; the core's last agent message reads as one",
        "'PROBE_DONE'",
    ),
    "final answer in a tool call (NOOA)": (
        "native:nooa/tool_failure",
        _answer_argument,
        ".tool_calls: the extension's outcome has final answer 'PROBE_DONE'",
        "as an argument's value",
    ),
    "final answer in a tool call (Stirrup)": (
        "native:stirrup/tool_failure",
        _answer_argument,
        ".tool_calls: the extension's outcome has final answer 'PROBE_DONE'",
        "as an argument's value",
    ),
    "final answer within the message (Terminus 2)": (
        "native:terminus-2/tool_failure",
        _answer_text,
        ".message: the extension's outcome has final answer 'PROBE_DONE'",
        "within the last agent step's message",
    ),
}


SEEN_BY_CHECKS = {
    "tool-call function name": {"tools.request_join"},
    "tool-call id": {"tools.request_join"},
    # The history's arguments, read back from the core fields, are held to the reply that issued the call.
    "tool-call arguments": {"history.witness_results"},
    # The last agent message is the history's last assistant turn, whose text is held to the reply it stands for.
    "final agent message": {"history.witness_text"},
    "final answer within the message (Terminus 2)": {"history.witness_text"},
}


def _statuses(ep: Episode, rollout: Any) -> dict[str, str]:
    ev = Evidence(ep.scenario, rollout=rollout, witness=Witness(ep.witness), markers=ep.markers)
    return {r.id: str(r.status) for r in run_checks(ev, scope_of(ep.scenario, None))}


@pytest.mark.parametrize("control", list(CONTROLS))
def test_a_core_field_edited_away_from_the_extension_fails_the_audit_naming_it(control: str, tmp_path: Path) -> None:
    name, edit, where, words = CONTROLS[control]
    ep, traj = _exported(name, tmp_path)
    doc = json.loads(traj.read_text())
    assert core_faults(doc, atif_to_rollout(doc)) == []
    edit(doc)
    # Most of these lies no check sees: the rollout read from the edited trajectory gets every status the honest one
    # gets, so only the core fields' agreement with the extension can catch them. A tool call's id or name moved
    # away from its record is seen by tools.request_join too (the history's call then joins no record), and its
    # arguments by history.witness_results (the history's then differ from the reply's), and the last agent message by
    # history.witness_text (the history's last turn then says what its reply did not).
    lied, honest = _statuses(ep, atif_to_rollout(doc)), _statuses(ep, ep.rollout)
    assert {k for k in honest if lied[k] != honest[k]} == SEEN_BY_CHECKS.get(control, set())
    traj.write_text(json.dumps(doc))
    [result] = audit(tmp_path / "atif", tmp_path / "audited", rollout_format="atif").results
    assert result["verdict"] == "fail"
    assert result["normalize"]["status"] == "error"
    message = result["normalize"]["message"]
    assert message.startswith("the ATIF trajectory's core fields disagree with its extra.harness_probe: "), message
    assert where in message, message
    assert words in message, message


@pytest.mark.parametrize("name", list(dict.fromkeys(n for n, *_ in CONTROLS.values())))
def test_the_honest_export_of_each_control_audits_as_the_rollout_does(name: str, tmp_path: Path) -> None:
    _exported(name, tmp_path)
    [via_atif] = audit(tmp_path / "atif", tmp_path / "via-atif", rollout_format="atif").results
    [direct] = audit(tmp_path / "run", tmp_path / "direct").results
    assert via_atif["normalize"]["status"] == "ok"
    assert {c["id"]: c["status"] for c in via_atif["checks"]} == {c["id"]: c["status"] for c in direct["checks"]}


@pytest.mark.parametrize("name", ["native:nooa/retry_429", "native:nooa/tool_failure", "native:stirrup/tool_failure"])
def test_history_calls_never_run_as_tools_make_no_tool_record(name: str) -> None:
    # Class 10: NOOA's prefill and return_result, Stirrup's finish are history calls the rollout records no tool
    # call for; read back from ATIF they came back as status-less tool records and failed tools.record.
    ep = load_episode(name)
    recorded = {t["tool_call_id"] for t in ep.rollout["tool_calls"]}
    history = {
        tc["tool_call_id"]
        for inv in ep.rollout["invocations"]
        for m in inv["conversation"]
        for tc in m.get("tool_calls") or []
    }
    assert history - recorded  # the case: calls of the history that no tool record stands for
    back = atif_to_rollout(json.loads(json.dumps(rollout_to_atif(ep.rollout))))
    assert [t["tool_call_id"] for t in back["tool_calls"]] == [t["tool_call_id"] for t in ep.rollout["tool_calls"]]
    assert _statuses(ep, back)["tools.record"] == _statuses(ep, ep.rollout)["tools.record"] == "pass"


def test_arguments_given_as_json_text_reach_the_core_as_their_object() -> None:
    # A history whose arguments are JSON text (ATIF's must be an object): a Harbor reader sees the object, not {},
    # and the text is kept in the extension, which the core is then held to.
    ep = load_episode("native:claude-code/tool_failure")
    tc = next(tc for m in ep.rollout["invocations"][0]["conversation"] for tc in m.get("tool_calls") or [])
    args = tc["arguments"]
    tc["arguments"] = json.dumps(args)
    doc = json.loads(json.dumps(rollout_to_atif(ep.rollout)))
    [core] = [c for s in doc["steps"] for c in s.get("tool_calls") or [] if c["tool_call_id"] == tc["tool_call_id"]]
    assert core["arguments"] == args
    assert core["extra"]["harness_probe"]["arguments_raw"] == json.dumps(args)
    assert atif_to_rollout(doc) == ep.rollout
    assert core_faults(doc, atif_to_rollout(doc)) == []
    core["arguments"] = {**args, "extra": 1}
    assert [f.path for f in core_faults(doc, atif_to_rollout(doc))] == [
        f"$.steps[{doc['steps'].index(next(s for s in doc['steps'] if core in (s.get('tool_calls') or [])))}]"
        f".tool_calls[0].arguments"
    ]


def test_arguments_text_nested_past_the_parsers_depth_are_no_object() -> None:
    assert as_object('{"a": ' * 100_000 + "1" + "}" * 100_000) == {}
    assert as_object('{"command": "ls"}') == {"command": "ls"}
    assert as_object("[1]") == as_object("not json") == as_object(None) == {}


def test_an_honest_history_name_other_than_the_records_is_kept_and_held() -> None:
    ep = load_episode("native:claude-code/tool_failure")
    tc = next(tc for m in ep.rollout["invocations"][0]["conversation"] for tc in m.get("tool_calls") or [])
    tc["tool_name"] = "bash"  # the record says Bash
    doc = json.loads(json.dumps(rollout_to_atif(ep.rollout)))
    [core] = [c for s in doc["steps"] for c in s.get("tool_calls") or [] if c["tool_call_id"] == tc["tool_call_id"]]
    assert core["extra"]["harness_probe"]["function_name_raw"] == "bash"
    assert atif_to_rollout(doc) == ep.rollout
    assert core_faults(doc, atif_to_rollout(doc)) == []
    core["function_name"] = "Bash"
    assert [f.message for f in core_faults(doc, atif_to_rollout(doc))] == [
        "'Bash' where the history's name the extension keeps is 'bash'"
    ]


def test_an_honest_last_message_that_is_no_answer_is_said_so() -> None:
    # A rollout that records no final answer although its history ends in assistant text: the export says the core
    # shows no answer there, so the honest trajectory reads back whole and without a fault.
    ep = load_episode("native:claude-code/model_error")
    ep.rollout["invocations"][0]["conversation"].append({"role": "assistant", "content": "I could not finish."})
    assert ep.rollout["outcome"]["final_answer"] is None
    doc = json.loads(json.dumps(rollout_to_atif(ep.rollout)))
    assert doc["extra"]["harness_probe"]["final_answer_at"] == "nowhere"
    assert atif_to_rollout(doc) == ep.rollout
    assert core_faults(doc, atif_to_rollout(doc)) == []
    del doc["extra"]["harness_probe"]["final_answer_at"]
    [fault] = core_faults(doc, atif_to_rollout(doc))
    assert "the extension's outcome records no final answer" in fault.message


def test_mini_swe_agents_answer_within_its_submitting_command_is_held() -> None:
    # mini-SWE-agent submits through the shell: the answer is within the last command's text. (Its captures hold no
    # witness, so this control reads the trajectory without the audit.)
    rollout = normalize_trajectory(fixtures("mini-swe-agent") / "tool_success" / TRAJECTORY_NAME, "mini-swe-agent")
    answer = rollout["outcome"]["final_answer"]
    assert isinstance(answer, str) and answer
    doc = json.loads(json.dumps(rollout_to_atif(dict(rollout))))
    assert doc["extra"]["harness_probe"]["final_answer_at"] == "tool_arguments_text"
    assert core_faults(doc, atif_to_rollout(doc)) == []
    [tc] = [s for s in doc["steps"] if s["source"] == "agent"][-1]["tool_calls"]
    tc["arguments"] = {k: v.replace(answer, "NOT_DONE") for k, v in tc["arguments"].items()}
    tc["extra"]["harness_probe"]["record"]["arguments"] = tc["arguments"]  # the record too: only the answer moved
    [fault] = core_faults(doc, atif_to_rollout(doc))
    assert fault.path.endswith(".tool_calls") and "within an argument's value" in fault.message, fault
