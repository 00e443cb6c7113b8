"""contrib/slurm's scripts without a cluster: the arguments each passes to the CLI, and the exit codes they end with.

The CLI is a stand-in script that logs its arguments and exits as told; tests/integration/test_slurm.py runs the
same scripts through a real Slurm cluster and the real CLI.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

CONTRIB = Path(__file__).resolve().parents[3] / "contrib" / "slurm"
FAKE = """#!/bin/bash
echo "$*" >> "$FAKE_LOG"
case "$1 $2" in
  "--log-format json") exit "${FAKE_RUN_EXIT:-0}" ;;
  merge*) exit "${FAKE_MERGE_EXIT:-0}" ;;
esac
exit 0
"""


@pytest.fixture
def fake(tmp_path: Path) -> dict[str, str]:
    cli = tmp_path / "hp"
    cli.write_text(FAKE)
    cli.chmod(0o755)
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "HARNESS_PROBE"))}
    return {
        **keep,
        "HARNESS_PROBE": str(cli),
        "FAKE_LOG": str(tmp_path / "calls"),
        "HARNESS_PROBE_OUT": str(tmp_path / "out"),
    }


def _sh(script: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CONTRIB / script), *args], env=env, capture_output=True, text=True, timeout=60, check=False
    )


def _calls(env: dict[str, str]) -> list[str]:
    log = Path(env["FAKE_LOG"])
    return log.read_text().splitlines() if log.exists() else []


def test_a_task_runs_its_shard_and_a_measurement_is_not_a_failed_task(fake: dict[str, str]) -> None:
    env = {**fake, "SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_MAX": "3"}
    res = _sh("shard.sbatch", env, "-H", "reference", "--jobs", "2")
    assert res.returncode == 0, res.stderr
    out = fake["HARNESS_PROBE_OUT"]
    assert _calls(env) == [f"--log-format json run -H reference --jobs 2 --shard 2/3 -o {out}/shard-2"]
    assert _sh("shard.sbatch", {**env, "FAKE_RUN_EXIT": "1"}).returncode == 0  # a check failed: measured
    assert _sh("shard.sbatch", {**env, "FAKE_RUN_EXIT": "2"}).returncode == 2  # an error fails the task


def test_a_task_refuses_what_cannot_be_a_shard(fake: dict[str, str]) -> None:
    res = _sh(
        "shard.sbatch", {**fake, "SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_MAX": "4", "HARNESS_PROBE_SHARDS": "3"}
    )
    assert res.returncode == 2 and "shard 4 of 3" in res.stderr
    res = _sh("shard.sbatch", {**fake, "SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_MAX": "3"})
    assert res.returncode == 2 and "--array=1-N" in res.stderr
    assert "not an array task" in _sh("shard.sbatch", fake).stderr
    no_out = {k: v for k, v in fake.items() if k != "HARNESS_PROBE_OUT"}
    res = _sh("shard.sbatch", {**no_out, "SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_MAX": "1"})
    assert res.returncode == 2 and "HARNESS_PROBE_OUT is not set" in res.stderr
    assert _calls(fake) == []


def test_a_requeued_task_moves_its_unfinished_folder_aside(fake: dict[str, str]) -> None:
    shard = Path(fake["HARNESS_PROBE_OUT"]) / "shard-1"
    shard.mkdir(parents=True)
    (shard / "suite.json").write_text("{}")
    env = {**fake, "SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_MAX": "1", "SLURM_JOB_ID": "77"}
    assert _sh("shard.sbatch", env).returncode == 0
    assert (shard.parent / "shard-1.interrupted-77" / "suite.json").is_file() and not shard.exists()


# What the root of a partial summary looks like as a run writes it (sorted keys, indented by two); an episode's
# own `"verdict": "interrupted"` is deeper, and so are counts.
INTERRUPTED_SUMMARY = json.dumps(
    {"counts": {"interrupted": 1}, "interrupted": {"signal": "SIGTERM", "not_run": []}, "verdict": "interrupted"},
    indent=2,
    sort_keys=True,
)


def _shard(out: Path, i: int, *, summary: bool | str, run_id: str) -> None:
    d = out / f"shard-{i}"
    d.mkdir(parents=True)
    (d / "suite.json").write_text(json.dumps({"run_id": run_id}))
    if summary:
        (d / "summary.json").write_text(summary if isinstance(summary, str) else "{}")


def test_the_merge_takes_the_finished_shards_and_a_missing_one_is_never_a_pass(fake: dict[str, str]) -> None:
    out = Path(fake["HARNESS_PROBE_OUT"])
    _shard(out, 1, summary=True, run_id="r1")
    _shard(out, 3, summary=False, run_id="r3")  # killed: a suite, no summary; shard 2 never started
    env = {**fake, "HARNESS_PROBE_SHARDS": "3"}
    res = _sh("merge.sbatch", env)
    # Even a merge that exited 0 over what it was given ends in 2: shards 2 and 3 did not finish.
    assert res.returncode == 2, res.stderr
    assert "shard(s) 2 3 of 3 did not finish" in res.stderr
    assert _calls(env) == ["cleanup --run-id r3", f"merge {out}/shard-1 -o {out}/merged"]


def test_the_merge_job_ends_with_the_merges_exit_code(fake: dict[str, str]) -> None:
    out = Path(fake["HARNESS_PROBE_OUT"])
    for i in (1, 2):
        _shard(out, i, summary=True, run_id=f"r{i}")
    env = {**fake, "HARNESS_PROBE_SHARDS": "2"}
    assert _sh("merge.sbatch", {**env, "FAKE_MERGE_EXIT": "1"}).returncode == 1
    assert _sh("merge.sbatch", {**env, "FAKE_MERGE_EXIT": "0"}).returncode == 0
    assert _calls(env)[-1] == f"merge {out}/shard-1 {out}/shard-2 -o {out}/merged"
    assert _sh("merge.sbatch", {**env, "HARNESS_PROBE_SHARDS": "x"}).returncode == 2


def test_the_merge_with_no_finished_shard_says_so(fake: dict[str, str]) -> None:
    res = _sh("merge.sbatch", {**fake, "HARNESS_PROBE_SHARDS": "2"})
    assert res.returncode == 2 and "no shard of 2 finished" in res.stderr
    assert _calls(fake) == []


def test_a_shard_stopped_by_scancel_left_a_partial_summary_and_is_not_taken_for_finished(fake: dict[str, str]) -> None:
    out = Path(fake["HARNESS_PROBE_OUT"])
    _shard(out, 1, summary=True, run_id="r1")
    _shard(out, 2, summary=INTERRUPTED_SUMMARY, run_id="r2")  # SIGTERM: the run wrote its partial summary
    env = {**fake, "HARNESS_PROBE_SHARDS": "2"}
    res = _sh("merge.sbatch", env)
    assert res.returncode == 2, res.stderr
    assert "shard(s) 2 of 2 did not finish" in res.stderr
    assert _calls(env) == ["cleanup --run-id r2", f"merge {out}/shard-1 -o {out}/merged"]


def test_a_requeued_task_moves_a_partial_run_aside_too(fake: dict[str, str]) -> None:
    out = Path(fake["HARNESS_PROBE_OUT"])
    _shard(out, 1, summary=INTERRUPTED_SUMMARY, run_id="r1")
    env = {**fake, "SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_MAX": "1", "SLURM_JOB_ID": "78"}
    assert _sh("shard.sbatch", env).returncode == 0
    assert (out / "shard-1.interrupted-78" / "summary.json").is_file() and not (out / "shard-1").exists()


def test_a_task_moves_an_earlier_finished_shard_aside_so_it_never_stands_in_for_this_one(fake: dict[str, str]) -> None:
    out = Path(fake["HARNESS_PROBE_OUT"])
    _shard(out, 2, summary=True, run_id="r2")  # an earlier task's whole shard
    env = {**fake, "SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_MAX": "2", "SLURM_JOB_ID": "79", "FAKE_RUN_EXIT": "2"}
    assert _sh("shard.sbatch", env).returncode == 2
    assert (out / "shard-2.earlier-79" / "summary.json").is_file() and not (out / "shard-2").exists()
    # This task failed: the merge names shard 2 as missing instead of taking the earlier results.
    _shard(out, 1, summary=True, run_id="r1")
    res = _sh("merge.sbatch", {**fake, "HARNESS_PROBE_SHARDS": "2"})
    assert res.returncode == 2 and "shard(s) 2 of 2 did not finish" in res.stderr


SBATCH = """#!/bin/bash
echo "$*" >> "$FAKE_LOG"
echo 7
"""


@pytest.mark.parametrize("left", ["shard-1", "shard-2", "merged"])
def test_submit_refuses_an_out_an_earlier_submission_wrote(fake: dict[str, str], tmp_path: Path, left: str) -> None:
    sbatch = tmp_path / "bin" / "sbatch"
    sbatch.parent.mkdir()
    sbatch.write_text(SBATCH)
    sbatch.chmod(0o755)
    env = {**fake, "PATH": f"{sbatch.parent}:{fake['PATH']}"}
    out = Path(fake["HARNESS_PROBE_OUT"])
    res = _sh("submit.sh", env, "2", str(out), "-H", "reference")
    assert res.returncode == 0, res.stderr
    assert len(_calls(env)) == 2  # the array and the merge
    Path(env["FAKE_LOG"]).unlink()
    (out / left).mkdir(parents=True)
    res = _sh("submit.sh", env, "2", str(out), "-H", "reference")
    assert res.returncode == 2 and f"{out / left} already exists" in res.stderr
    assert _calls(env) == []  # nothing submitted
