"""ATIF both ways on real captured episodes: export validates, reads back to the same rollout and the same checks."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from orchestrator.atif import ATIF_GAPS, atif_to_rollout, extension_faults, rollout_to_atif, validate_atif
from orchestrator.audit import audit, find_episodes
from orchestrator.evidence import faults, load_json
from orchestrator.harnesses import get_harness
from orchestrator.harnesses.mini_swe_agent_normalize import TRAJECTORY_NAME, normalize_trajectory
from orchestrator.output import write_json
from orchestrator.paths import EpisodePaths
from orchestrator.verdict import collect_evidence, judge, normalize_native, read_rollout, result_skeleton
from tests.unit.checks.conftest import FIXTURES
from tests.unit.harnesses.captured import captured, fixtures, materialize, replay

# Captured episodes with a witness, of every real harness whose native logs we keep that way.
_WITNESSED = [(h, n) for h in ("claude-code", "codex", "hermes", "opencode", "pi") for n in captured(h)]


def _through_atif(rollout: dict[str, Any], version: str = "ATIF-v1.8") -> dict[str, Any]:
    doc = rollout_to_atif(rollout, version)
    validate_atif(doc)
    # Through text, as a file would go: nothing may survive only as a Python object.
    return atif_to_rollout(json.loads(json.dumps(doc)))


def _strip_extension(node: Any) -> Any:
    """The same trajectory as a producer without our `extra.harness_probe` would write it."""
    if isinstance(node, list):
        return [_strip_extension(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: _strip_extension(v) for k, v in node.items() if k != "extra"}
    extra = {k: v for k, v in (node.get("extra") or {}).items() if k != "harness_probe"}
    if extra:
        out["extra"] = extra
    return out


@pytest.mark.parametrize(("harness", "name"), _WITNESSED, ids=[f"{h}-{n}" for h, n in _WITNESSED])
def test_real_episode_exports_and_reads_back_with_the_same_checks(harness: str, name: str, tmp_path: Path) -> None:
    paths = materialize(harness, name, tmp_path)
    rollout, record = normalize_native(get_harness(harness), paths.native)
    if rollout is None:
        pytest.skip(f"no rollout from this capture: {record['message']}")
    back = _through_atif(rollout)
    assert back == rollout
    before = {k: str(v.status) for k, v in replay(paths, rollout).items()}
    assert {k: str(v.status) for k, v in replay(paths, back).items()} == before


# A trajectory alone, or a whole witnessed episode with it where the run's native/ held it.
_MINI = {
    p.name: next(
        f for f in (p / TRAJECTORY_NAME, p / "native" / ".mini-swe-agent-probe" / TRAJECTORY_NAME) if f.is_file()
    )
    for p in fixtures("mini-swe-agent").iterdir()
    if p.is_dir()
}


@pytest.mark.parametrize("name", sorted(_MINI))
def test_mini_swe_agent_rollouts_read_back_unchanged(name: str) -> None:
    rollout = normalize_trajectory(_MINI[name], "mini-swe-agent")
    assert _through_atif(rollout, "ATIF-v1.7") == rollout


_ATIF_EPISODES = sorted(p.name for p in FIXTURES.iterdir())


def test_a_step_without_a_time_gets_none_in_atif_not_its_calls() -> None:
    """A harness that times its calls but not its steps: the export shows no step time (its call's completion is
    not the step's, and steps.witness_times would judge it), and reads back with none."""
    rollout = json.loads((FIXTURES / "tool_success" / "rollout.json").read_text())
    for step in rollout["steps"]:
        step["timestamp"] = None
    doc = rollout_to_atif(rollout)
    assert [s for s in doc["steps"] if "timestamp" in s] == []
    assert _through_atif(rollout) == rollout


@pytest.mark.parametrize("name", _ATIF_EPISODES)
def test_golden_episode_reads_back_unchanged(name: str) -> None:
    rollout = json.loads((FIXTURES / name / "rollout.json").read_text())
    assert _through_atif(rollout) == rollout


@pytest.mark.parametrize(("name", "summaries"), [("context_compaction", 2), ("gemini_context_compaction", 1)])
def test_a_compaction_side_call_is_no_agent_step_and_keeps_its_place(name: str, summaries: int) -> None:
    # A compaction's summary request answered no turn of the history: no agent step stands for it (the reply
    # after it is the next step's call), and the invocation's refs still list it where the rollout did.
    rollout = json.loads((FIXTURES / name / "rollout.json").read_text())
    side = [ref for c in rollout["compactions"] for ref in c["model_call_refs"]]
    assert len(side) == summaries
    doc = rollout_to_atif(rollout)
    stood_for = [
        c["model_call_id"]
        for step in doc["steps"]
        if step["source"] == "agent"
        for c in step["extra"]["harness_probe"]["model_calls"]
    ]
    assert not set(side) & set(stood_for)
    assert stood_for == [r for s in rollout["steps"] for r in s["model_call_refs"]]
    assert [c["model_call_id"] for c in doc["extra"]["harness_probe"]["unattached_model_calls"]] == side
    back = atif_to_rollout(json.loads(json.dumps(doc)))
    assert back["invocations"][0]["model_call_refs"] == rollout["invocations"][0]["model_call_refs"]
    assert back["steps"] == rollout["steps"]


# A compaction's side call is in no step, so ATIF's core fields (agent steps and their metrics) have no place for
# it: only the extension keeps it (the test above); core fields alone are judged on the other episodes (the
# compaction episode on Gemini is the same case).
@pytest.mark.parametrize("name", [n for n in _ATIF_EPISODES if not n.endswith("context_compaction")])
def test_core_fields_alone_give_a_valid_rollout_and_name_what_atif_cannot_hold(name: str) -> None:
    rollout = json.loads((FIXTURES / name / "rollout.json").read_text())
    doc = _strip_extension(rollout_to_atif(rollout))
    validate_atif(doc)
    got = atif_to_rollout(doc)
    assert {g["code"] for g in got["gaps"]} == {g["code"] for g in ATIF_GAPS}
    # What ATIF does hold survives: the model-visible history, the tool calls and what each returned.
    # (ATIF's message is a string: an assistant turn with no text reads back as "", not null.)
    # (ATIF's arguments are an object: arguments that are no object, cut-off JSON text, read back as {}.)
    want = [_core(m) for m in rollout["invocations"][0]["conversation"]]
    assert [_core(m) for m in got["invocations"][0]["conversation"]] == want
    assert [(t["tool_call_id"], t["arguments"], t["output"]) for t in got["tool_calls"]] == [
        (t["tool_call_id"], _object(t["arguments"]), t["output"]) for t in rollout["tool_calls"]
    ]
    assert all(t["status"] is None and t["exit_code"] is None for t in got["tool_calls"])
    # A success is a 200 that delivered its reply: a stream cut after its status line (200, `stream_cut`) is not one.
    ok = [c for c in rollout["model_calls"] if c["status_code"] == 200 and c["error_category"] is None]
    assert [c["token_stats"]["prompt"] for c in got["model_calls"]] == [c["token_stats"]["prompt"] for c in ok]
    assert all(c["status_code"] is None and c["response_id"] is None for c in got["model_calls"])
    # Only wire facts are null; the document otherwise meets probe-rollout/v1 where it can.
    assert {f.path.split("]")[-1] for f in faults(got, "probe-rollout/v1")} <= {".protocol"}


def _object(arguments: Any) -> Any:
    return arguments if isinstance(arguments, dict) else {}


def _core(m: dict[str, Any]) -> dict[str, Any]:
    """A history entry as ATIF's core fields hold it: text for content, object arguments, no origin mark."""
    out = {k: v for k, v in m.items() if k != "origin"} | {"content": m.get("content") or ""}
    if "tool_calls" in m:
        out["tool_calls"] = [{**tc, "arguments": _object(tc["arguments"])} for tc in m["tool_calls"]]
    return out


def test_core_only_trajectory_fails_the_checks_it_cannot_feed_and_passes_the_history(tmp_path: Path) -> None:
    src = FIXTURES / "tool_success"
    paths = EpisodePaths(tmp_path / "ep")
    shutil.copytree(src, paths.root)
    rollout = json.loads(paths.rollout.read_text())
    got = atif_to_rollout(_strip_extension(rollout_to_atif(rollout)))
    status = {k: str(v.status) for k, v in replay(paths, got).items()}
    assert status["history.rebuildable"] == "pass"
    assert status["outcome.final_answer"] == "pass"
    assert status["witness.tools_executed"] == "pass"
    for failing in ("gaps.none_voiding", "calls.outcome", "calls.timing", "tokens.match", "tools.record"):
        assert status[failing] == "fail", failing


def _run_dir(tmp_path: Path, *names: str) -> Path:
    run = tmp_path / "run"
    for name in names:
        shutil.copytree(FIXTURES / name, run / "reference" / name)
    return run


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    hp = str(Path(sys.executable).with_name("harness-probe"))
    return subprocess.run([hp, "-q", *args], capture_output=True, text=True, timeout=120, check=False)


def _statuses(out: Path) -> dict[str, Any]:
    summary = load_json(out / "summary.json", "probe-summary/v1")
    return {
        (h["name"], s["scenario"]): (s["verdict"], {c["id"]: c["status"] for c in s["checks"]})
        for h in summary["harnesses"]
        for s in h["scenarios"]
    }


def _with_results(run: Path) -> None:
    """Each episode's scenario_result.json as a run writes it, with the execution record its fixture holds."""
    for ep in sorted(run.glob("reference/*")):
        scenario = json.loads((ep / "scenario.json").read_text())
        execution = json.loads((ep / "execution.json").read_text())
        result = result_skeleton("reference", ep.name, "run-1", f"ep-{ep.name}", "2026-01-01T00:00:00.000Z", execution)
        rollout, why = read_rollout(ep / "rollout.json")
        judge(result, scenario, collect_evidence(scenario, EpisodePaths(ep), rollout, why))
        result["finished_at"] = "2026-01-01T00:00:01.000Z"
        write_json(ep / "scenario_result.json", result)


def test_export_then_audit_as_atif_gives_the_check_results_of_the_run(tmp_path: Path) -> None:
    run = _run_dir(tmp_path, *_ATIF_EPISODES)
    _with_results(run)
    exported = _cli("export", str(run), "-o", str(tmp_path / "atif"))
    assert exported.returncode == 0, exported.stderr
    for traj in sorted((tmp_path / "atif").glob("*/*/trajectory.json")):
        assert json.loads(traj.read_text())["schema_version"] == "ATIF-v1.8"
    assert _cli("export", str(run), "-o", str(tmp_path / "atif")).returncode == 2  # an output is never reused
    direct = audit(run, tmp_path / "direct")
    via_atif = audit(tmp_path / "atif", tmp_path / "via-atif", rollout_format="atif")
    assert via_atif.exit_code == direct.exit_code == 0
    assert _statuses(tmp_path / "via-atif") == _statuses(tmp_path / "direct")
    # The run's execution record went with the export: the process checks are judged on both sides.
    assert {checks["process.exit_status"] for _, checks in _statuses(tmp_path / "via-atif").values()} == {"pass"}
    assert load_json(tmp_path / "via-atif" / "audit.json", "audit/v1")["rollout_format"] == "atif"


def test_audit_as_atif_without_a_trajectory_is_a_finding_not_an_error(tmp_path: Path) -> None:
    run = _run_dir(tmp_path, "tool_success")
    res = audit(run, tmp_path / "out", rollout_format="atif")
    assert res.exit_code == 1
    [result] = res.results
    assert result["verdict"] == "fail"
    assert result["normalize"]["status"] == "error"
    assert "trajectory.json" in result["normalize"]["message"]
    # The saved probe rollout is not what was audited, so it is not left beside the results either.
    assert not (tmp_path / "out" / "reference" / "tool_success" / "rollout.json").exists()


def test_audit_as_atif_reads_a_trajectory_the_harness_wrote_in_native(tmp_path: Path) -> None:
    run = _run_dir(tmp_path, "tool_success")
    ep = run / "reference" / "tool_success"
    doc = rollout_to_atif(json.loads((ep / "rollout.json").read_text()), "ATIF-v1.7")
    (ep / "native" / "logs").mkdir(parents=True)
    (ep / "native" / "logs" / "trajectory.json").write_text(json.dumps(doc))
    assert audit(run, tmp_path / "out", rollout_format="atif").exit_code == 0


def test_audit_as_atif_of_a_broken_trajectory_fails_with_the_faults(tmp_path: Path) -> None:
    run = _run_dir(tmp_path, "tool_success")
    (run / "reference" / "tool_success" / "trajectory.json").write_text('{"schema_version": "ATIF-v1.8"}')
    res = audit(run, tmp_path / "out", rollout_format="atif")
    assert res.results[0]["verdict"] == "fail"
    assert "not an ATIF trajectory" in res.results[0]["normalize"]["message"]


_EXT = "extra.harness_probe"


def _agent_step(doc: dict[str, Any]) -> dict[str, Any]:
    return next(s for s in doc["steps"] if s["source"] == "agent" and s.get("tool_calls"))


@pytest.mark.parametrize(
    ("damage", "where"),
    [
        (
            lambda d: d["extra"]["harness_probe"]["order"]["model_calls"].append({"not": "an id"}),
            "order.model_calls[3]",
        ),
        (
            lambda d: d["extra"]["harness_probe"]["unattached_model_calls"].append("not a call"),
            "unattached_model_calls[0]",
        ),
        (lambda d: d["extra"]["harness_probe"]["unattached_model_calls"].append({}), "unattached_model_calls[0]"),
        (lambda d: d["extra"]["harness_probe"]["unattached_steps"].append("not a step"), "unattached_steps[0]"),
        (
            lambda d: d["extra"]["harness_probe"]["unattached_steps"].append({"step_no": [1]}),
            "unattached_steps[0].step_no",
        ),
        (lambda d: d["extra"]["harness_probe"].update(model_call_refs=[{"id": 1}]), "model_call_refs[0]"),
        (lambda d: d["extra"]["harness_probe"].update(gaps="none"), "gaps"),
        (lambda d: d["extra"]["harness_probe"].update(invocation_id=7), "invocation_id"),
        (lambda d: d["extra"]["harness_probe"].update(unknown=True), ""),
        (lambda d: d["extra"].update(harness_probe=[]), ""),
        (lambda d: _agent_step(d)["extra"]["harness_probe"]["model_calls"].append({"x": 1}), "model_calls[1]"),
        (lambda d: _agent_step(d)["extra"]["harness_probe"].update(step_no="2"), "step_no"),
        (lambda d: _agent_step(d)["tool_calls"][0]["extra"]["harness_probe"].update(record={}), "record"),
    ],
    ids=[
        "unhashable-order",
        "call-of-another-type",
        "call-without-id",
        "step-of-another-type",
        "unhashable-step-number",
        "ref-of-another-type",
        "gaps-not-a-list",
        "invocation-id-not-a-string",
        "unknown-key",
        "extension-not-an-object",
        "step-call-without-id",
        "step-number-a-string",
        "tool-record-without-id",
    ],
)
def test_audit_as_atif_of_a_trajectory_whose_extension_is_not_ours_fails_with_where(
    tmp_path: Path, damage: Any, where: str
) -> None:
    # Valid ATIF (`extra` is free-form there) written by a harness into native/: an extension that is not what
    # probe-atif-extension/v1 says is a finding against it (fail, with where), not the audit's error.
    run = _run_dir(tmp_path, "tool_success")
    ep = run / "reference" / "tool_success"
    doc = rollout_to_atif(json.loads((ep / "rollout.json").read_text()))
    assert not extension_faults(doc)
    damage(doc)
    validate_atif(doc)
    (ep / "native" / "logs").mkdir(parents=True)
    (ep / "native" / "logs" / "trajectory.json").write_text(json.dumps(doc))
    [result] = audit(run, tmp_path / "out", rollout_format="atif").results
    assert result["verdict"] == "fail"
    assert result["normalize"]["status"] == "error"
    message = result["normalize"]["message"]
    assert "extra.harness_probe is not a valid probe-atif-extension/v1" in message
    step = doc["steps"].index(_agent_step(doc))
    at = [f"$.{_EXT}", f"$.steps[{step}].{_EXT}", f"$.steps[{step}].tool_calls[0].{_EXT}"]
    assert any(f"{prefix}{'.' + where if where else ''}: " in message for prefix in at), message


def test_every_export_of_the_golden_episodes_carries_a_valid_extension() -> None:
    for name in _ATIF_EPISODES:
        doc = rollout_to_atif(json.loads((FIXTURES / name / "rollout.json").read_text()))
        assert extension_faults(doc) == [], name
        assert doc["extra"]["harness_probe"]["rollout_format"] == "probe-rollout/v1"


def test_unknown_rollout_format_and_harness_with_atif_are_refused(tmp_path: Path) -> None:
    run = _run_dir(tmp_path, "tool_success")
    with pytest.raises(ValueError, match="unknown rollout format"):
        audit(run, tmp_path / "a", rollout_format="jsonl")
    with pytest.raises(ValueError, match="cannot be combined"):
        audit(run, tmp_path / "b", get_harness("reference"), rollout_format="atif")


def test_export_skips_an_invalid_rollout_with_its_fault_and_copies_no_link(tmp_path: Path) -> None:
    # A saved run may hold anything: a rollout of the wrong shape is named and skipped (the others are exported),
    # and evidence is copied as the audit copies it, never through a link to a file of the host.
    run = _run_dir(tmp_path, "tool_success", "retry_429")
    broken = run / "reference" / "retry_429" / "rollout.json"
    rollout = json.loads(broken.read_text())
    rollout["model_calls"][0] = None
    broken.write_text(json.dumps(rollout))
    secret = tmp_path / "host-secret"
    secret.write_text("not the harness's")
    (run / "reference" / "tool_success" / "markers" / "stolen.txt").symlink_to(secret)
    exported = _cli("export", str(run), "-o", str(tmp_path / "atif"))
    assert exported.returncode == 0, exported.stderr
    assert "skipped reference/retry_429: rollout.json is not a valid probe-rollout/v1: $.model_calls[0]:" in (
        exported.stderr
    )
    assert "skipped reference/tool_success: markers/stolen.txt:" in exported.stderr
    assert sorted(p.parent.name for p in (tmp_path / "atif").glob("*/*/trajectory.json")) == ["tool_success"]
    assert not (tmp_path / "atif" / "reference" / "tool_success" / "markers" / "stolen.txt").exists()
    assert (tmp_path / "atif" / "reference" / "tool_success" / "witness.jsonl").is_file()


def test_export_skips_a_rollout_that_makes_no_valid_atif(tmp_path: Path) -> None:
    # Valid probe-rollout/v1, but two invocations of one id would be two subagent trajectories of one id in ATIF.
    run = _run_dir(tmp_path, "tool_success", "context_compaction")
    path = run / "reference" / "context_compaction" / "rollout.json"
    rollout = json.loads(path.read_text())
    rollout["invocations"] += [rollout["invocations"][0]] * 2
    assert not faults(rollout, "probe-rollout/v1")
    path.write_text(json.dumps(rollout))
    exported = _cli("export", str(run), "-o", str(tmp_path / "atif"))
    assert exported.returncode == 0, exported.stderr
    assert "skipped reference/context_compaction: ATIF export of reference/context_compaction is not valid" in (
        exported.stderr
    )
    assert sorted(p.parent.name for p in (tmp_path / "atif").glob("*/*/trajectory.json")) == ["tool_success"]


def test_export_skips_an_episode_whose_extension_would_not_read_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The writer's own output is held to the extension's schema: a trajectory a reader would refuse is never left.
    import orchestrator.atif.files as files

    def broken(rollout: dict[str, Any], version: str) -> dict[str, Any]:
        doc = rollout_to_atif(rollout, version)
        doc["extra"]["harness_probe"]["gaps"] = "none"
        return doc

    monkeypatch.setattr(files, "rollout_to_atif", broken)
    run = _run_dir(tmp_path, "tool_success")
    res = files.export_atif(find_episodes(run), tmp_path / "atif")
    assert res.written == []
    [why] = res.skipped
    assert why.startswith("reference/tool_success: the extension of the ATIF export of reference/tool_success")
    assert "$.extra.harness_probe.gaps:" in why
