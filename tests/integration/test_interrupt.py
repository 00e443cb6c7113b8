"""Ctrl-C or SIGTERM during a real catalogue run of the honest reference harness: the episodes the stop cut short
are `interrupted` (never a `fail`), the partial summary says so, the terminal says how far the run got and where
its results are, exit 130, nothing is left in the engine, and an audit of the folder keeps them interrupted."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from orchestrator.evidence import load_json
from tests.integration.conftest import HP, Images, hp, labelled

pytestmark = pytest.mark.docker


def _results(out: Path) -> dict[str, dict[str, Any]]:
    return {
        p.parent.name: load_json(p, "scenario-result/v1") for p in sorted(out.glob("reference/*/scenario_result.json"))
    }


def _harness_running(run_id: str) -> bool:
    found = subprocess.run(
        ["docker", "ps", "-q", "--filter", f"label=harness-probe.run={run_id}",
         "--filter", "label=harness-probe.role=harness"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return bool(found.split())


# SIGINT side by side (the stop's clean-up kills the running harnesses), SIGTERM with --jobs 1 (the stop lands in
# the episode's own thread): the two ways an episode is cut short.
CASES = [(signal.SIGINT, "2"), (signal.SIGTERM, "1")]


@pytest.mark.parametrize(("signum", "jobs"), CASES, ids=[f"{signal.Signals(s).name}-jobs{j}" for s, j in CASES])
def test_an_interrupted_catalogue_is_interrupted_never_failed(
    signum: int, jobs: str, images: Images, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    proc = subprocess.Popen([HP, "run", "-H", "reference", "--jobs", jobs, "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    run_id = None
    try:
        deadline = time.monotonic() + 600
        # After the first episode has finished, once a next one's harness runs: the stop then cuts one short.
        while time.monotonic() < deadline and proc.poll() is None:
            if run_id is None and (out / "suite.json").is_file():
                run_id = json.loads((out / "suite.json").read_text())["run_id"]
            if run_id and _results(out) and _harness_running(run_id):
                break
            time.sleep(0.1)
        assert run_id and proc.poll() is None, "the run ended before it could be interrupted"
        proc.send_signal(signum)
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr[-3000:]
    name = signal.Signals(signum).name
    results = _results(out)
    verdicts = {s: r["verdict"] for s, r in results.items()}
    assert "fail" not in verdicts.values(), verdicts
    assert "interrupted" in verdicts.values(), verdicts
    assert "pass" in verdicts.values(), verdicts  # the episode that finished before the stop, as judged
    for r in results.values():
        if r["verdict"] == "interrupted":
            assert r["checks"] == [] and f"interrupted by {name}" in r["execution"]["error"]

    summary = load_json(out / "summary.json", "probe-summary/v1")
    assert summary["verdict"] == "interrupted" and summary["exit_code"] == 130
    record = summary["interrupted"]
    assert record["signal"] == name
    assert record["finished"] == sum(v != "interrupted" for v in verdicts.values())
    assert record["interrupted"] == sum(v == "interrupted" for v in verdicts.values())
    planned = len(json.loads((out / "suite.json").read_text())["scenarios"])
    assert record["finished"] + record["interrupted"] + len(record["not_run"]) == planned
    assert summary["counts"]["fail"] == 0 and summary["errors"] == []
    for e in record["not_run"]:  # a plan made ahead for an episode that never began leaves no folder
        assert not (out / e["harness"] / e["scenario"]).exists(), e
    assert "## Interrupted" in (out / "report.md").read_text()
    assert "<h2>Interrupted</h2>" in (out / "report.html").read_text()
    assert (out / "junit.xml").is_file()

    told = " ".join(stderr.split())  # the terminal may wrap long lines
    assert f"interrupted by {name}: {record['finished']} of {planned} episode(s) finished" in told, stderr[-3000:]
    assert f"{len(record['not_run'])} did not run" in told
    assert str(out.resolve()) in told and "what the run created was removed" in told
    assert "interrupted" in stdout  # the verdict table shows them as what they are
    for kind in ("ps", "network", "volume"):
        assert labelled(kind, run_id) == [], kind

    audited = tmp_path / "audited"
    res = hp("audit", str(out), "-o", str(audited))
    assert res.code == 130, res.stderr[-3000:]
    again = {s: r["verdict"] for s, r in _results(audited).items()}
    assert again == verdicts
    audit_summary = load_json(audited / "summary.json", "probe-summary/v1")
    assert audit_summary["verdict"] == "interrupted" and audit_summary["interrupted"] == record
