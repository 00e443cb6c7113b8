"""Hostile harness, real engine, against the readers after collection (issue 31: 1-4): a lone surrogate and non-UTF-8
names, an ATIF trajectory asking for 10^15 calls, one breaking the strict reader's rules beside a linked one, and
a rollout 1,100 folders deep each end as `fail` with a named finding, in bounded memory, every report written."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from orchestrator.evidence import load_json
from tests.integration.conftest import HP, Images
from tests.integration.test_hostile_collect import RSS_LIMIT_KIB, HostileRun, _assert_contained, _run

pytestmark = pytest.mark.docker


def _cli(*args: str) -> tuple[subprocess.CompletedProcess[bytes], int]:
    """The CLI, its output as bytes (a strict reader of them is the test), and the peak RSS of it in KiB."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    proc = subprocess.run([HP, *args], capture_output=True, timeout=600, check=False)
    return proc, max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)


def _audit_atif(run: HostileRun, out: Path) -> dict[str, Any]:
    proc, rss = _cli("-q", "audit", str(run.out.parent.parent), "--rollout-format", "atif", "-o", str(out))
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert rss < RSS_LIMIT_KIB, f"audit peak RSS {rss} KiB"
    result: dict[str, Any] = load_json(
        out / "reference" / "tool_success" / "scenario_result.json", "scenario-result/v1"
    )
    assert result["verdict"] == "fail" and result["execution"]["status"] != "error", result["execution"]
    return result


def test_a_lone_surrogate_and_non_utf8_names_reach_every_sink_as_escapes(images: Images, tmp_path: Path) -> None:
    run = _run("hostile-surrogate", tmp_path / "out")
    _assert_contained(run)
    assert "a lone surrogate (\\ud800) in a string" in str(run.result["normalize"]["message"])
    [link] = [p for k, p in run.findings if k == "symlink"]
    assert link.endswith("bad-\\udced\\udca0\\udc80-link")  # the name's bytes, as escapes
    root = run.out.parent.parent
    for name in ("report.md", "report.html", "junit.xml", "summary.json"):
        (root / name).read_bytes().decode("utf-8")  # strict: every report written whole, as UTF-8
    md, check = tmp_path / "report.md", tmp_path / "check.json"
    proc, _ = _cli("ci", "report", str(root), "-o", str(md), "--check-json", str(check))
    assert proc.returncode == 1, proc.stderr
    assert json.loads(check.read_bytes())["output"]["summary"] == md.read_text(encoding="utf-8")
    proc, _ = _cli("export", str(root), "-o", str(tmp_path / "atif"))
    # No rollout to export: an input error (2) naming the episode and why, never a traceback or a 0-byte file.
    assert proc.returncode == 2 and b"Traceback" not in proc.stderr, proc.stderr
    assert b"skipped reference/" in proc.stderr and b"nothing exported" in proc.stderr, proc.stderr
    assert not (tmp_path / "atif").exists()


def test_an_atif_call_count_of_10_15_is_a_fail_in_bounded_memory(images: Images, tmp_path: Path) -> None:
    run = _run("hostile-atif-calls", tmp_path / "out")
    assert run.result["verdict"] == "pass" and run.code == 0, run.stderr[-3000:]  # the probe rollout is honest
    result = _audit_atif(run, tmp_path / "audit")
    assert "llm_call_count_cap" in result["normalize"]["message"]


def test_an_atif_trajectory_breaking_the_strict_reader_is_the_writers_fail(images: Images, tmp_path: Path) -> None:
    run = _run("hostile-atif-strict", tmp_path / "out")
    assert ("symlink", "/home/probe/.probe-reference/aaa/trajectory.json") in run.findings
    result = _audit_atif(run, tmp_path / "audit")
    message = result["normalize"]["message"]
    assert "atif/trajectory.json" in message and "an integer of 60 digits" in message
    assert "root:x:0:0" not in json.dumps(result)


def test_a_rollout_1100_folders_deep_is_not_collected_and_named(images: Images, tmp_path: Path) -> None:
    run = _run("hostile-deep-tree", tmp_path / "out")
    _assert_contained(run)
    deep = [p for k, p in run.findings if k == "too_deep"]
    assert len(deep) == 1 and deep[0].endswith(".probe-reference" + "/d" * 64), run.findings
    assert "rollout" in run.result["inputs_unavailable"]
    # The saved run is read by every later reader without an error: audit, export, merge.
    proc, _ = _cli("-q", "audit", str(run.out.parent.parent), "-o", str(tmp_path / "audit"))
    assert proc.returncode == 1, proc.stderr[-3000:]
    proc, _ = _cli("merge", str(run.out.parent.parent), "-o", str(tmp_path / "merged"))
    assert proc.returncode == 1, proc.stderr[-3000:]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
