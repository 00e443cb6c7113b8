"""Parallel episodes, shards and merge through real containers: the same verdicts and results as one sequential
run, and a Ctrl-C during a parallel run leaves nothing behind. A representative slice of the catalogue (one
tool scenario, one failed-tool scenario, a retried fault, a terminal error) keeps the cost small."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from orchestrator.evidence import load_json
from tests.integration.conftest import HP, Images, hp, labelled, partial_summary

pytestmark = pytest.mark.docker

SCENARIOS = ["tool_success", "tool_failure", "retry_429", "model_error"]
ARGS = ["-H", "reference", *(a for s in SCENARIOS for a in ("-s", s))]
# What legitimately differs between two runs of the same inputs: clocks and the ids minted per run/episode.
VOLATILE = {"started_at", "finished_at", "run_id", "episode_id"}


def _result(path: Path) -> dict[str, Any]:
    r = {k: v for k, v in load_json(path, "scenario-result/v1").items() if k not in VOLATILE}
    r["execution"] = {k: v for k, v in r["execution"].items() if k != "seconds"}
    # How long copying out took and how many bytes the logs had are timings too; what was refused is not.
    r["collection"] = {"findings": r.get("collection", {}).get("findings")}
    return r


def _results(out: Path) -> dict[str, dict[str, Any]]:
    return {f"{p.parent.parent.name}/{p.parent.name}": _result(p) for p in sorted(out.glob("*/*/scenario_result.json"))}


def _verdicts(out: Path) -> tuple[int, dict[str, Any], list[Any]]:
    s = json.loads((out / "summary.json").read_text())
    table = [
        (h["name"], e["scenario"], e["verdict"], e["first_failure"]) for h in s["harnesses"] for e in h["scenarios"]
    ]
    return s["exit_code"], s["counts"], table


def _no_leftovers(out: Path) -> None:
    run_id = json.loads((out / "suite.json").read_text())["run_id"]
    for kind in ("ps", "network", "volume"):
        assert labelled(kind, run_id) == [], kind


def test_jobs_shards_and_merge_equal_one_sequential_run(images: Images, tmp_path: Path) -> None:
    seq, par = tmp_path / "seq", tmp_path / "par"
    r1 = hp("run", *ARGS, "--jobs", "1", "-o", str(seq), timeout=1200)
    r2 = hp("run", *ARGS, "--jobs", "2", "-o", str(par), timeout=1200)
    assert r1.code == r2.code == 0, (r1.stderr[-2000:], r2.stderr[-2000:])
    assert _verdicts(par) == _verdicts(seq)
    assert _results(par) == _results(seq)
    assert len(_results(seq)) == len(SCENARIOS)

    shards = [tmp_path / "shard1", tmp_path / "shard2"]
    for i, d in enumerate(shards, start=1):
        res = hp("run", *ARGS, "--shard", f"{i}/2", "--jobs", "1", "-o", str(d), timeout=1200)
        assert res.code == 0, res.stderr[-2000:]
        assert len(_results(d)) == len(SCENARIOS) // 2
    assert not set(_results(shards[0])) & set(_results(shards[1]))
    merged = tmp_path / "merged"
    res = hp("merge", *map(str, shards), "-o", str(merged))
    assert res.code == 0, res.stderr
    assert _verdicts(merged) == _verdicts(seq)
    assert _results(merged) == _results(seq)
    res = hp("merge", str(shards[0]), str(shards[0]), "-o", str(tmp_path / "twice"))
    assert res.code == 2 and "OverlappingShards" in res.stderr
    for d in (seq, par, *shards):
        _no_leftovers(d)


def _running_harnesses(run_id: str) -> int:
    out = subprocess.run(
        ["docker", "ps", "-q", "--filter", f"label=harness-probe.run={run_id}",
         "--filter", "label=harness-probe.role=harness"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return len(out.split())


def test_interrupt_during_a_parallel_run_leaves_nothing(images: Images, tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = subprocess.Popen([HP, "run", *ARGS, "--jobs", "2", "-o", str(out)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 600
        run_id = None
        while time.monotonic() < deadline and proc.poll() is None:
            if run_id is None and (out / "suite.json").is_file():
                run_id = json.loads((out / "suite.json").read_text())["run_id"]
            if run_id and _running_harnesses(run_id) >= 2:
                break
            time.sleep(0.2)
        assert run_id and proc.poll() is None, "two episodes never ran at once"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err[-2000:]
    summary = partial_summary(out)  # the two episodes the stop killed are interrupted, never failed
    assert summary is not None and summary["counts"]["interrupted"] >= 2, summary
    for kind in ("ps", "network", "volume"):
        assert labelled(kind, run_id) == [], kind
