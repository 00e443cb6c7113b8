"""The shipped workflow: pinned actions, least privilege, and exit codes that survive its shell and make."""

from __future__ import annotations

import json
import re
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from orchestrator.ci.action import main
from orchestrator.resources import checkout_root

REPO_ROOT = checkout_root() or Path(__file__).resolve().parents[3]

WORKFLOW = REPO_ROOT / ".github" / "workflows" / "harness-conformance.yml"


def _wf() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(WORKFLOW.read_text())
    return data


def _steps() -> list[tuple[str, dict[str, Any]]]:
    return [(job, step) for job, spec in _wf()["jobs"].items() for step in spec["steps"]]


def test_triggers_and_reuse() -> None:
    on = _wf()[True]  # YAML 1.1 reads the key `on` as a boolean
    assert set(on) == {"pull_request", "merge_group", "schedule", "workflow_dispatch", "workflow_call"}
    assert on["workflow_call"]["inputs"]["base-ref"]["type"] == "string"


def test_every_action_pinned_by_sha_with_version_comment() -> None:
    # The one local action is harness-probe's own (action.yml), from its checkout in .harness-probe.
    for path in (WORKFLOW, REPO_ROOT / "action.yml"):
        uses = re.findall(r"^\s*(?:- )?uses: (\S+)(.*)", path.read_text(), re.M)
        assert uses
        for ref, comment in uses:
            if ref == "./.harness-probe":
                continue
            assert re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", ref), ref
            assert re.fullmatch(r" # v\d+\.\d+\.\d+", comment), (ref, comment)


def test_least_privilege() -> None:
    wf = _wf()
    assert wf["permissions"] == {}
    writers = {job for job, spec in wf["jobs"].items() if "write" in spec.get("permissions", {}).values()}
    assert writers == {"report"}
    assert wf["jobs"]["report"]["permissions"]["checks"] == "write"
    assert wf["defaults"]["run"]["shell"] == "bash"
    assert all("timeout-minutes" in spec for spec in wf["jobs"].values())
    assert wf["jobs"]["probe"]["strategy"]["fail-fast"] is False


def test_probe_jobs_use_the_action_from_harness_probes_own_checkout() -> None:
    scripts = [step["run"] for _, step in _steps() if "run" in step]
    commands = [ln.strip() for s in scripts for ln in s.splitlines() if not ln.strip().startswith("#")]
    assert not [c for c in commands if re.search(r"(^|[;&|(]\s*)make\b", c)]
    jobs = _wf()["jobs"]
    for job in ("select", "probe", "report", "drift"):
        checkout = jobs[job]["steps"][0]
        assert checkout["with"]["path"] == ".harness-probe", job  # never the caller's files
        assert checkout["with"]["repository"] == "${{ env.HP_REPOSITORY }}", job
    (probe,) = [s for s in jobs["probe"]["steps"] if s.get("uses") == "./.harness-probe"]
    # 1 (a harness failing checks) is a measurement here; the report job makes the check of it.
    assert probe["with"]["fail-on"] == "error" and "timeout-minutes" in probe
    assert probe["with"]["artifact-name"].startswith("harness-conformance-${{ matrix.harness }}-")
    assert all("timeout-minutes" in step for job, step in _steps() if job == "probe" and "run" in step)


def _fake_cli(tmp: Path, run_code: int) -> Path:
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "harness-probe"
    fake.write_text(f"#!/bin/bash\ncase \" $* \" in *' run '*) exit {run_code};; *) exit 0;; esac\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    return bin_dir


@pytest.mark.parametrize(("run_code", "step_ok"), [(0, True), (1, True), (2, False), (130, False)])
def test_probe_step_keeps_exit_codes(tmp_path: Path, run_code: int, step_ok: bool) -> None:
    """The action's probe step as the workflow runs it (fail-on: error): 1 is a measurement, 2 is not."""
    fake = _fake_cli(tmp_path, run_code) / "harness-probe"
    env = {
        "HP_HARNESS": "hermes",
        "HP_FAIL_ON": "error",
        "HP_EVIDENCE": str(tmp_path / "ev"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "GITHUB_OUTPUT": str(tmp_path / "out"),
    }
    assert (main(env, exe=str(fake)) == 0) == step_ok
    leg = json.loads((tmp_path / "ev" / "hermes-docker" / "leg.json").read_text())
    assert leg == {"schema": "ci-leg/v1", "harness": "hermes", "runtime": "docker", "exit_code": run_code}


@pytest.mark.parametrize(("run_code", "make_code"), [(0, 0), (1, 2), (2, 2)])
def test_make_probe_folds_failures_into_2(tmp_path: Path, run_code: int, make_code: int) -> None:
    """What README says of `make probe`: GNU make exits 2 for any failing recipe, so CI calls the CLI."""
    fake = _fake_cli(tmp_path, run_code) / "harness-probe"
    res = subprocess.run(
        ["make", "-s", "probe", f"HP={fake}", "HARNESS=hermes", f"OUT={tmp_path / 'out'}"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert res.returncode == make_code, res.stderr


def test_the_job_with_a_write_token_runs_the_base_commits_code_and_installs_are_constrained() -> None:
    jobs = _wf()["jobs"]
    report = jobs["report"]
    assert report["permissions"].get("checks") == "write"
    checkout = next(s for s in report["steps"] if str(s.get("uses", "")).startswith("actions/checkout@"))
    # A caller names harness-probe's commit (harness-probe-ref); in harness-probe's own runs it is the base commit.
    assert checkout["with"]["ref"].startswith("${{ inputs.harness-probe-ref || github.event.pull_request.base.sha ||")
    for name, job in jobs.items():
        for step in job["steps"]:
            if "pip install" in str(step.get("run", "")):
                assert "-c .harness-probe/.github/constraints.txt" in step["run"], name
    pins = [ln for ln in (REPO_ROOT / ".github" / "constraints.txt").read_text().splitlines() if ln[:1] not in "#"]
    assert pins and all("==" in ln for ln in pins)
    assert any(ln.startswith("orjson==") for ln in pins)
