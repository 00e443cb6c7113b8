"""Slurm for real: contrib/slurm's array job and the merge that depends on it, on a one-node cluster started here.

The reference catalogue as three array tasks plus the merge gives the verdicts one run gives, and leaves nothing in
the engine or the queue; a task cancelled while it runs, or before it starts, shows up as missing episodes (exit 2),
never as a pass.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harnesses.golden import verdict_table
from tests.integration.conftest import HP, RUNTIME_SUBSET_ARGS, Images, engine, hp, images, labelled
from tests.integration.slurm_cluster import Cluster, slurm_missing

pytestmark = [pytest.mark.docker, pytest.mark.skipif(slurm_missing() is not None, reason=str(slurm_missing()))]
__all__ = ["engine", "images"]  # fixtures, re-exported so pytest finds them here

CONTRIB = Path(__file__).resolve().parents[2] / "contrib" / "slurm"


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    # Not under pytest's own temporary folders: munged refuses a socket in a folder others cannot search (0700).
    root = Path(tempfile.mkdtemp(prefix="hp-slurm-"))
    c = Cluster(root)
    try:
        c.start()
        yield c
    finally:
        c.stop()
        shutil.rmtree(root, ignore_errors=True)


def _submit(cluster: Cluster, out: Path, shards: int, *run_args: str) -> tuple[str, str]:
    res = cluster.run(str(CONTRIB / "submit.sh"), str(shards), str(out), *run_args)
    assert res.returncode == 0, res.stderr
    array, merge = res.stdout.split()
    return array, merge


def _wait_done(cluster: Cluster, job: str, timeout: float = 1800) -> dict[str, str]:
    """The job's record once it ended; {} for an array task cancelled while pending (the controller keeps none)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = cluster.job(job)
        if info is None:
            return {}
        if info.get("JobState") not in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING"):
            return info
        time.sleep(1)
    raise AssertionError(f"job {job} did not end: {cluster.job(job)}\n{cluster.logs()}")


def _env(cluster: Cluster) -> None:
    cluster.env.update({"HARNESS_PROBE": HP})


def _shard_runs(out: Path) -> list[str]:
    return [json.loads(p.read_text())["run_id"] for p in sorted(out.glob("shard-*/suite.json"))]


def _no_leftovers(run_ids: list[str]) -> None:
    for run_id in run_ids:
        for kind in ("ps", "network", "volume"):
            assert labelled(kind, run_id) == [], (kind, run_id)


def _logs(out: Path) -> str:
    return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-1500:]}" for p in sorted(out.glob("logs/*")))


def test_three_shards_and_the_merge_equal_one_run(images: Images, cluster: Cluster, tmp_path: Path) -> None:
    single = tmp_path / "single"
    one = hp("run", "-H", "reference", *RUNTIME_SUBSET_ARGS, "-o", str(single), timeout=1800)
    assert one.code == 0, one.stderr[-2000:]

    _env(cluster)
    out = tmp_path / "slurm"
    array, merge = _submit(cluster, out, 3, "-H", "reference", *RUNTIME_SUBSET_ARGS, "--jobs", "1")
    info = _wait_done(cluster, merge)
    assert info["JobState"] == "COMPLETED" and info["ExitCode"] == "0:0", (info, _logs(out))
    for i in (1, 2, 3):
        task = _wait_done(cluster, f"{array}_{i}")
        assert task["JobState"] == "COMPLETED", (task, _logs(out))
    merged = out / "merged"
    summary: dict[str, Any] = json.loads((merged / "summary.json").read_text())
    assert summary["exit_code"] == 0 and summary["missing"] == [] and summary["full_suite"] is False
    assert [s["shard"]["index"] for s in json.loads((merged / "suite.json").read_text())["merged_from"]] == [1, 2, 3]
    assert verdict_table(merged, "reference") == verdict_table(single, "reference")
    assert summary["counts"] == json.loads((single / "summary.json").read_text())["counts"]
    assert cluster.queue() == []
    _no_leftovers(_shard_runs(out))


def test_a_cancelled_task_is_missing_episodes_never_a_pass(images: Images, cluster: Cluster, tmp_path: Path) -> None:
    # Shard 2 of these three is the long one (the reference waits out a withheld reply), so it is still running
    # when cancelled; shard 3 is cancelled at once, before or just after it starts.
    scenarios = ["tool_success", "harness_deadline", "tool_failure"]
    _env(cluster)
    out = tmp_path / "slurm"
    array, merge = _submit(cluster, out, 3, "-H", "reference", *(a for s in scenarios for a in ("-s", s)))
    assert cluster.run("scancel", f"{array}_3").returncode == 0
    suite = out / "shard-2" / "suite.json"
    deadline = time.monotonic() + 600
    while not suite.is_file() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert suite.is_file(), _logs(out)
    assert json.loads(suite.read_text())["episodes"] == [{"harness": "reference", "scenario": "harness_deadline"}]
    time.sleep(3)  # into the episode: its pod is up
    assert cluster.run("scancel", f"{array}_2").returncode == 0

    info = _wait_done(cluster, merge)
    assert info["ExitCode"] == "2:0", (info, _logs(out))
    assert _wait_done(cluster, f"{array}_2")["JobState"] == "CANCELLED"
    assert _wait_done(cluster, f"{array}_3").get("JobState", "CANCELLED") == "CANCELLED"
    # scancel's SIGTERM: the shard wrote its partial summary (or was killed before it could); never a whole one.
    stopped = out / "shard-2" / "summary.json"
    assert not stopped.exists() or json.loads(stopped.read_text())["verdict"] == "interrupted"
    summary = json.loads((out / "merged" / "summary.json").read_text())
    assert summary["exit_code"] == 2
    assert sorted(m["scenario"] for m in summary["missing"]) == ["harness_deadline", "tool_failure"]
    assert "shard(s) 2 3 of 3 did not finish" in (out / "logs" / "merge.log").read_text()
    assert cluster.queue() == []
    _no_leftovers(_shard_runs(out))
