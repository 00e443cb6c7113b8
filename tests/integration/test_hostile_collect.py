"""Hostile harness, real engine: links, loops, FIFOs, devices, a 100 GiB sparse file, FIFO and /dev/zero markers and
a 3000-deep request body each end as `fail` with a named finding, within bounded memory and disk, leaving nothing."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from orchestrator.checks import read_witness
from orchestrator.evidence import load_json
from tests.integration.conftest import HP, Images, labelled

pytestmark = pytest.mark.docker

RSS_LIMIT_KIB = 300 * 1024
DISK_LIMIT = 256 * 1024 * 1024
HOST_SECRET = "root:x:0:0"  # the first line of any /etc/passwd: must never appear in collected evidence


@dataclass
class HostileRun:
    code: int
    stderr: str
    peak_rss_kib: int
    out: Path
    result: dict[str, Any]

    @property
    def findings(self) -> list[tuple[str, str]]:
        return [(f["kind"], f["path"]) for f in self.result.get("collection", {}).get("findings", [])]


def _run(mode: str, out: Path, scenario: str = "tool_success") -> HostileRun:
    # The CLI in a child of a small wrapper, so the peak RSS measured is the orchestrator's (and its children's).
    wrapper = (
        "import resource, subprocess, sys\n"
        "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\n"
        "sys.stderr.buffer.write(p.stderr[-20000:])\n"
        "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    argv = [
        HP,
        "run",
        "-H",
        "reference",
        "-a",
        f"mode={mode}",
        "-s",
        scenario,
        "-o",
        str(out),
        "--timeout",
        "240",
    ]
    proc = subprocess.run([sys.executable, "-c", wrapper, *argv], capture_output=True, text=True, timeout=900)
    code, rss = (int(x) for x in proc.stdout.split())
    result = load_json(out / "reference" / scenario / "scenario_result.json", "scenario-result/v1")
    print(f"{mode}: exit {code}, peak RSS {rss} KiB, collected {result.get('collection', {}).get('bytes')} bytes")
    return HostileRun(code, proc.stderr, rss, out / "reference" / scenario, result)


def _assert_contained(run: HostileRun) -> None:
    """What every hostile episode must leave: a fail, bounded cost, a complete witness, reports, no leftovers."""
    assert run.result["verdict"] == "fail", run.stderr[-3000:]
    assert run.result["execution"]["status"] in ("exited", "timeout")
    assert run.code == 1, run.stderr[-3000:]
    assert run.peak_rss_kib < RSS_LIMIT_KIB, f"peak RSS {run.peak_rss_kib} KiB"
    assert (run.out.parent.parent / "summary.json").is_file()
    used = 0
    for folder, dirs, files in os.walk(run.out.parent.parent):
        for name in [*files, *dirs]:
            st = os.lstat(Path(folder) / name)
            assert stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode), f"{folder}/{name} is neither file nor folder"
            used += st.st_blocks * 512
            if stat.S_ISREG(st.st_mode) and st.st_size < 64 << 20:
                assert HOST_SECRET not in (Path(folder) / name).read_text(errors="replace"), f"{folder}/{name}"
    assert used < DISK_LIMIT, f"{used} bytes on disk"
    witness = read_witness(run.out / "witness.jsonl")
    assert witness.events[-1]["event"] == "end"
    run_id = load_json(run.out.parent.parent / "suite.json", "suite/v1")["run_id"]
    for kind in ("ps", "network", "volume"):
        assert labelled(kind, run_id) == [], f"docker {kind} still shows objects of run {run_id}"


def test_links_loops_fifos_and_devices_are_findings(images: Images, tmp_path: Path) -> None:
    run = _run("hostile-files", tmp_path / "out")
    _assert_contained(run)
    found = set(run.findings)
    base = "/home/probe/.probe-reference"
    for expected in [
        ("symlink", f"{base}/rollout.json"),
        ("symlink", f"{base}/shadow"),
        ("symlink", f"{base}/passwd-rel"),
        ("symlink", f"{base}/up"),
        ("symlink", f"{base}/self"),
        ("fifo", f"{base}/pipe"),
        ("symlink", "/probe/markers/up"),
        ("symlink", "/probe/markers/leak.txt"),
        ("fifo", "/probe/markers/pipe.txt"),
    ]:
        assert expected in found, sorted(found)
    assert "rollout" in run.result["inputs_unavailable"]
    assert (run.out / "native" / ".probe-reference" / "rollout.real.json").is_file()


def test_a_100_gib_sparse_file_is_not_copied(images: Images, tmp_path: Path) -> None:
    run = _run("hostile-sparse", tmp_path / "out")
    _assert_contained(run)
    assert ("over_cap_file", "/home/probe/.probe-reference/aaa-sparse.bin") in run.findings
    assert run.result["collection"]["bytes"] < DISK_LIMIT


def test_fifo_and_dev_zero_markers_do_not_stall_the_proxy(images: Images, tmp_path: Path) -> None:
    run = _run("hostile-marker", tmp_path / "out", "parallel_tools")  # two calls: a FIFO, then /dev/zero
    _assert_contained(run)
    kinds = {k for k, p in run.findings if p.startswith("/probe/markers/")}
    assert {"fifo", "symlink"} <= kinds, run.findings
    events = read_witness(run.out / "witness.jsonl").events
    markers = [e for e in events if e["event"] == "marker"]
    assert markers and all(not e.get("matches", False) for e in markers), json.dumps(markers)[:2000]


def test_a_3000_deep_request_body_is_a_violation(images: Images, tmp_path: Path) -> None:
    run = _run("hostile-deep-body", tmp_path / "out")
    _assert_contained(run)
    events = read_witness(run.out / "witness.jsonl").events
    (violation,) = [e for e in events if e["event"] == "violation"]
    assert violation["code"] == "body_over_cap" and violation["size"] > 6000 and len(violation["sha256"]) == 64
    failed = {c["id"] for c in run.result["checks"] if c["status"] == "fail"}
    assert "witness.no_violations" in failed
