"""What each real harness shows besides its verdict table: the checks of its own, per harness, on its catalogue run.

test_golden.py runs each harness's catalogue once and calls these with the run's output directory. A harness with
no entry here is held to its golden verdict table alone. Function names carry no other harness's name, so
`pytest tests/harnesses -k NAME` selects only NAME's tests.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

from orchestrator.atif import read_atif_rollout
from orchestrator.images import IMAGES_DIR
from tests.harnesses.golden import results

__all__ = ["OWN"]


def claude_code_runtime_records_the_locked_image(out: Path) -> None:
    lock = hashlib.sha256((IMAGES_DIR / "claude-code" / "package-lock.json").read_bytes()).hexdigest()
    for runtime_file in sorted(out.glob(f"{'claude-code'}/*/runtime.json")):
        harness = json.loads(runtime_file.read_text())["harness"]
        assert harness["version"] == "2.1.328 (Claude Code)"
        assert harness["image_id"].startswith("sha256:")
        assert harness["files"]["package-lock.json"] == lock
    rollout = json.loads((out / "claude-code" / "tool_success" / "rollout.json").read_text())
    assert rollout["harness"] == {"name": "claude-code", "version": "2.1.328"}


def claude_code_each_scenario_ends_on_its_own(out: Path) -> None:
    for name, r in results(out, "claude-code").items():
        assert r["execution"]["status"] == "exited", (name, r["execution"])
    # A withheld reply is given up at the byte watchdog (20 s), far inside the episode timeout.
    assert results(out, "claude-code")["harness_deadline"]["execution"]["seconds"] < 120


def claude_code_only_the_scripted_provider_was_spoken_to(out: Path) -> None:
    for episode in sorted((out / "claude-code").iterdir()):
        events = [json.loads(line) for line in (episode / "witness.jsonl").read_text().splitlines()]
        # No side requests (titles, quota, token counting), no lookups of other hosts (telemetry, updates).
        assert {e["kind"] for e in events if e["event"] == "attempt"} == {"model"}, episode.name
        assert {e["path"] for e in events if e["event"] == "attempt"} == {"/v1/messages?beta=true"}, episode.name
        assert [e for e in events if e["event"] in ("violation", "egress")] == [], episode.name


def cline_runtime_records_the_locked_image(out: Path) -> None:
    lock = hashlib.sha256((IMAGES_DIR / "cline" / "package-lock.json").read_bytes()).hexdigest()
    for runtime_file in sorted(out.glob("cline/*/runtime.json")):
        harness = json.loads(runtime_file.read_text())["harness"]
        assert harness["version"] == "cline 3.0.65"
        assert harness["files"]["package-lock.json"] == lock
    rollout = json.loads((out / "cline" / "tool_success" / "rollout.json").read_text())
    assert rollout["harness"] == {"name": "cline", "version": "3.0.65"}


CLINE_ENDS_ON = ("model_error", "stream_cut", "body_not_json", "length_cut", "sse_malformed", "stream_error_event")


def cline_each_scenario_ends_on_its_own_but_the_silent_stream(out: Path) -> None:
    for name, r in results(out, "cline").items():
        # A failure that ends the run exits 1: a 400, a cut stream, and of catalogue II a body that is not JSON, a
        # reply cut at the token limit, a malformed event and an error event (it retries none of them); a withheld
        # stream is waited on until the kill.
        want = ("deadline", None) if name == "harness_deadline" else ("exited", int(name in CLINE_ENDS_ON))
        assert (r["execution"]["status"], r["execution"]["exit_code"]) == want, (name, r["execution"])
        assert r["normalize"]["status"] == "ok", (name, r["normalize"])
        # Cline's own `auth` step stored the provider before every run.
        auth = (out / "cline" / name / "native" / ".cline-probe" / "auth.log").read_text()
        assert "Provider configured:" in auth and "openai-compatible" in auth, (name, auth)


def cline_its_telemetry_stays_off_only_the_feature_flag_lookup_is_left(out: Path) -> None:
    for episode in sorted((out / "cline").iterdir()):
        events = [json.loads(line) for line in (episode / "witness.jsonl").read_text().splitlines()]
        assert {e["path"] for e in events if e["event"] == "attempt"} == {"/v1/chat/completions"}, episode.name
        # The opt-out holds (no otel.cline.bot); PostHog's feature flags have no setting and are looked up each run.
        assert {e["target"] for e in events if e["event"] == "egress"} == {"data.cline.bot"}, episode.name


def codex_each_scenario_ran_to_the_end_on_its_own(out: Path) -> None:
    for name, r in results(out, "codex").items():
        # A terminal model error, and a reply cut at the token limit (catalogue II's length_cut), make `codex exec`
        # exit 1; everything else ends with 0, never by the timeout.
        assert (r["execution"]["status"], r["execution"]["exit_code"]) == (
            "exited",
            1 if name in ("model_error", "length_cut") else 0,
        ), (name, r["execution"])
        runtime = json.loads((out / "codex" / name / "runtime.json").read_text())
        assert runtime["harness"]["version"] == "codex-cli 0.169.0"


def hermes_runtime_records_the_locked_image(out: Path) -> None:
    lock = hashlib.sha256((IMAGES_DIR / "hermes" / "requirements.lock").read_bytes()).hexdigest()
    for runtime_file in sorted(out.glob(f"{'hermes'}/*/runtime.json")):
        harness = json.loads(runtime_file.read_text())["harness"]
        assert harness["version"] == "Hermes Agent v0.19.0 (2026.7.20)"
        assert harness["image_id"].startswith("sha256:")
        assert harness["files"]["requirements.lock"] == lock


def mini_swe_agent_each_scenario_ran_to_the_end_on_its_own(out: Path) -> None:
    for name, r in results(out, "mini-swe-agent").items():
        assert r["execution"]["status"] == "exited", (name, r["execution"])
        assert r["normalize"]["status"] == "ok", (name, r["normalize"])


def mini_swe_agent_the_final_answer_went_through_the_shell(out: Path) -> None:
    episode = out / "mini-swe-agent" / "tool_success"
    played = json.loads((episode / "scenario.json").read_text())
    assert played["harness_profile"] == {
        "final_answer": {"via": "shell", "prefix": "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}
    }
    events = [json.loads(line) for line in (episode / "witness.jsonl").read_text().splitlines()]
    (submit,) = [e for e in events if e["event"] == "tool_call" and e.get("final_submit")]
    marker = [e for e in events if e["event"] == "marker" and e["tool_call_id"] == submit["tool_call_id"]]
    assert [(m["present"], m["matches"]) for m in marker] == [(True, True)]
    rollout = json.loads((episode / "rollout.json").read_text())
    assert rollout["outcome"]["final_answer"] == "PROBE_DONE"


def nooa_each_scenario_ran_and_was_normalized(out: Path) -> None:
    for name, r in results(out, "nooa").items():
        assert r["execution"]["status"] in ("exited", "timeout", "deadline"), (name, r["execution"])
        assert r["normalize"]["status"] == "ok", (name, r["normalize"])


def nooa_commands_went_through_execute_python_and_the_answer_through_return_result(out: Path) -> None:
    episode = out / "nooa" / "tool_failure"
    played = json.loads((episode / "scenario.json").read_text())
    assert played["harness_profile"] == {"final_answer": {"via": "tool", "tool": "return_result", "argument": "result"}}
    events = [json.loads(line) for line in (episode / "witness.jsonl").read_text().splitlines()]
    calls = [e for e in events if e["event"] == "tool_call"]
    assert [c["name"] for c in calls] == ["execute_python", "execute_python"]
    assert all("await self.shell.run(" in c["arguments"]["code"] for c in calls)
    # The markers were written by the shell NOOA exposes, and its own record shows the scripted exit codes.
    assert [e["present"] for e in events if e["event"] == "marker"] == [True, True]
    result = json.loads((episode / "native" / "agent" / "result.json").read_text())
    assert (result["success"], result["response"]) == (True, "PROBE_DONE")
    rollout = json.loads((episode / "rollout.json").read_text())
    assert [(t["exit_code"], t["status"]) for t in rollout["tool_calls"]] == [(7, "failed"), (0, "succeeded")]
    assert rollout["outcome"]["final_answer"] == "PROBE_DONE"


def opencode_each_scenario_ran_to_the_end_on_its_own(out: Path) -> None:
    for name, r in results(out, "opencode").items():
        assert r["execution"]["status"] == "exited", (name, r["execution"])
        # OpenCode exits 1 after a terminal model error, 0 otherwise (pushed to its context window it summarizes
        # its history, continues from the summary and completes).
        assert r["execution"]["exit_code"] == (1 if name == "model_error" else 0), (
            name,
            r["execution"],
        )
        assert r["normalize"]["status"] == "ok", (name, r["normalize"])
    runtime = json.loads((out / "opencode" / "tool_success" / "runtime.json").read_text())
    assert runtime["harness"]["version"] == "opencode 1.18.33"


def opencode_the_printed_log_is_complete_and_also_in_harness_log(out: Path) -> None:
    episode = out / "opencode" / "model_error"
    printed = (episode / "native" / ".opencode-probe" / "stderr.log").read_text()
    assert "disposing instance" in printed.splitlines()[-1]
    assert "disposing instance" in (episode / "harness.log").read_text()


def pi_episodes_ran_on_their_own_except_the_silent_stream(out: Path) -> None:
    for name, r in results(out, "pi").items():
        if name == "harness_deadline":
            # No deadline of Pi's applies once a stream has its headers: it is killed at the scenario's bound, and
            # has written no session yet.
            assert r["execution"]["status"] == "deadline", r["execution"]
            assert r["execution"]["deadline_seconds"] == 120 and r["execution"]["seconds"] < 150, r["execution"]
            assert "Pi wrote no session file" in r["normalize"]["message"]
            continue
        assert r["execution"]["status"] == "exited", (name, r["execution"])
        assert r["normalize"]["status"] == "ok", (name, r["normalize"])
    runtime = json.loads((out / "pi" / "tool_success" / "runtime.json").read_text())
    assert runtime["harness"]["version"] == "pi 0.73.1"


def scicode_each_scripted_step_reached_scicode_as_a_python_block_and_ran_in_its_scoring_phase(out: Path) -> None:
    episode = out / "scicode" / "tool_success"
    played = json.loads((episode / "scenario.json").read_text())
    assert played["harness_profile"] == {"delivery": "python_blocks"}
    events = [json.loads(line) for line in (episode / "witness.jsonl").read_text().splitlines()]
    attempts = [e for e in events if e["event"] == "attempt"]
    # One fresh request per sub-step, no tools, never streamed.
    assert [(a["status"], a["stream"]) for a in attempts] == [(200, False)] * 3
    assert not any(e["event"] == "tool_result_seen" for e in events)
    markers = [e for e in events if e["event"] == "marker"]
    assert len(markers) == 2 and all(m["present"] and m["matches"] for m in markers)
    rollout = json.loads((episode / "rollout.json").read_text())
    assert [t["status"] for t in rollout["tool_calls"]] == ["succeeded"] * 3


def scicode_no_egress_even_at_the_end_of_a_run(out: Path) -> None:
    """SciCode downloads its test data from Google Drive when it is absent: the image's empty file keeps it local."""
    for name, r in results(out, "scicode").items():
        checks = {c["id"]: c["status"] for c in r["checks"]}
        assert checks["egress.none"] == "pass", name


def stirrup_each_scenario_ran_to_the_end_on_its_own(out: Path) -> None:
    for name, r in results(out, "stirrup").items():
        assert r["execution"]["status"] == "exited", (name, r["execution"])
        assert r["normalize"]["status"] == "ok", (name, r["normalize"])


def stirrup_commands_went_through_code_exec_and_the_answer_through_finish(out: Path) -> None:
    episode = out / "stirrup" / "tool_failure"
    played = json.loads((episode / "scenario.json").read_text())
    assert played["harness_profile"] == {"final_answer": {"via": "tool", "tool": "finish", "argument": "reason"}}
    events = [json.loads(line) for line in (episode / "witness.jsonl").read_text().splitlines()]
    calls = [e for e in events if e["event"] == "tool_call"]
    assert [(c["name"], c["arguments"]) for c in calls] == [("code_exec", {"cmd": c["command"]}) for c in calls]
    seen = [e["output"] for e in events if e["event"] == "tool_result_seen"]
    assert [f"<exit_code>{c['exit_code']}</exit_code>" in s for c, s in zip(calls, seen, strict=True)] == [True, True]
    record = json.loads((episode / "native" / ".stirrup-probe" / "run.json").read_text())
    assert record["returned"]["finish_params"] == {"reason": "PROBE_DONE", "paths": []}
    rollout = json.loads((episode / "rollout.json").read_text())
    assert rollout["outcome"]["final_answer"] == "PROBE_DONE"


def terminus_2_the_steps_reached_terminus_as_typed_commands(out: Path) -> None:
    episode = out / "terminus-2" / "tool_success"
    played = json.loads((episode / "scenario.json").read_text())
    assert played["harness_profile"] == {"delivery": "keystrokes"}
    events = [json.loads(line) for line in (episode / "witness.jsonl").read_text().splitlines()]
    calls = [e for e in events if e["event"] == "tool_call"]
    markers = {e["tool_call_id"]: (e["present"], e["matches"]) for e in events if e["event"] == "marker"}
    assert calls and all(markers.get(c["tool_call_id"]) == (True, True) for c in calls)
    result = results(out, "terminus-2")["tool_success"]
    assert result["normalize"]["status"] == "ok"
    # Judged as played: the keystroke profile puts the checks that join on tool call ids out of scope.
    checks = {c["id"]: c["status"] for c in result["checks"]}
    assert checks["tools.witness_ids"] == checks["tools.request_join"] == "not_applicable"


def terminus_2_its_own_trajectory_reads_as_atif(out: Path) -> None:
    rollout, why = read_atif_rollout(out / "terminus-2" / "tool_success", "terminus-2")
    assert why is None and rollout is not None
    assert len(rollout["model_calls"]) >= 3


def gemini_cli_spoke_only_generate_content_and_nothing_else(out: Path) -> None:
    for episode in sorted((out / "gemini-cli").iterdir()):
        events = [json.loads(line) for line in (episode / "witness.jsonl").read_text().splitlines()]
        attempts = [e for e in events if e["event"] == "attempt"]
        # Only the agent's own streamed turns: no countTokens, models list, side request or other host (usage
        # statistics and the update check are off in its settings).
        assert {(e["kind"], e["protocol"], e["stream"]) for e in attempts} == {("model", "gemini", True)}, episode.name
        assert {e["path"] for e in attempts} == {"/v1beta/models/probe-model:streamGenerateContent?alt=sse"}
        assert [e for e in events if e["event"] in ("violation", "egress")] == [], episode.name


def gemini_cli_ends_on_its_own_but_for_a_silent_stream(out: Path) -> None:
    for name, r in results(out, "gemini-cli").items():
        # It never gives up on a stream that went silent; a 400, a cut stream and a malformed event (catalogue II's
        # sse_malformed) end it with 1.
        expected = (
            ("deadline", None)
            if name == "harness_deadline"
            else ("exited", 1 if name in ("model_error", "stream_cut", "sse_malformed") else 0)
        )
        assert (r["execution"]["status"], r["execution"]["exit_code"]) == expected, (name, r["execution"])
        runtime = json.loads((out / "gemini-cli" / name / "runtime.json").read_text())
        assert runtime["harness"]["version"] == "gemini-cli 0.61.0"


def gemini_cli_both_records_were_read_in_every_episode(out: Path) -> None:
    for episode in sorted((out / "gemini-cli").iterdir()):
        assert list((episode / "native" / ".gemini" / "tmp").glob("*/chats/session-*.jsonl")), episode.name
        assert (episode / "native" / ".gemini-probe" / "telemetry.log").stat().st_size > 0, episode.name
        rollout = json.loads((episode / "rollout.json").read_text())
        assert set(rollout["provenance"]["sources"]) == {"session", "otel"}, episode.name


OWN: dict[str, tuple[Callable[[Path], None], ...]] = {
    "claude-code": (
        claude_code_runtime_records_the_locked_image,
        claude_code_each_scenario_ends_on_its_own,
        claude_code_only_the_scripted_provider_was_spoken_to,
    ),
    "cline": (
        cline_runtime_records_the_locked_image,
        cline_each_scenario_ends_on_its_own_but_the_silent_stream,
        cline_its_telemetry_stays_off_only_the_feature_flag_lookup_is_left,
    ),
    "codex": (codex_each_scenario_ran_to_the_end_on_its_own,),
    "gemini-cli": (
        gemini_cli_spoke_only_generate_content_and_nothing_else,
        gemini_cli_ends_on_its_own_but_for_a_silent_stream,
        gemini_cli_both_records_were_read_in_every_episode,
    ),
    "hermes": (hermes_runtime_records_the_locked_image,),
    "mini-swe-agent": (
        mini_swe_agent_each_scenario_ran_to_the_end_on_its_own,
        mini_swe_agent_the_final_answer_went_through_the_shell,
    ),
    "nooa": (
        nooa_each_scenario_ran_and_was_normalized,
        nooa_commands_went_through_execute_python_and_the_answer_through_return_result,
    ),
    "opencode": (
        opencode_each_scenario_ran_to_the_end_on_its_own,
        opencode_the_printed_log_is_complete_and_also_in_harness_log,
    ),
    "pi": (pi_episodes_ran_on_their_own_except_the_silent_stream,),
    "scicode": (
        scicode_each_scripted_step_reached_scicode_as_a_python_block_and_ran_in_its_scoring_phase,
        scicode_no_egress_even_at_the_end_of_a_run,
    ),
    "stirrup": (
        stirrup_each_scenario_ran_to_the_end_on_its_own,
        stirrup_commands_went_through_code_exec_and_the_answer_through_finish,
    ),
    "terminus-2": (
        terminus_2_the_steps_reached_terminus_as_typed_commands,
        terminus_2_its_own_trajectory_reads_as_atif,
    ),
}
