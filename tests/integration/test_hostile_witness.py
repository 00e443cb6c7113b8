"""Hostile harness, real engine: 16 MiB request bodies in a loop and a 1.5 GiB chunked body each end as `fail` with a
named finding, with the witness, the run's disk and the proxy's memory bounded, and the proxy's root read-only."""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from pathlib import Path

import pytest

from orchestrator.checks import read_witness
from tests.integration.conftest import Images
from tests.integration.test_hostile_collect import HostileRun, _assert_contained, _run

pytestmark = pytest.mark.docker

WITNESS_BUDGET = 32 * 1024 * 1024  # proxy_addons/witness.py
# Well under the proxy's 1 GiB limit: one 16 MiB body in its copies (wire, decoded, parsed, the witness line) and the
# witness folder in memory peaked at 384 MiB (flood, loaded machine); keeping the bodies or the 1.5 GiB would not fit.
PROXY_MEMORY_LIMIT_MIB = 700
_MIB = {"KiB": 1 / 1024, "MiB": 1.0, "GiB": 1024.0, "B": 1 / (1 << 20)}


class ProxyMemory:
    """Samples `docker stats` of the run's proxy (found by the run id in suite.json, written first) while it runs."""

    def __init__(self, out: Path) -> None:
        self._out = out
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> ProxyMemory:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        run_id = None
        while not self._stop.is_set():
            if run_id is None and (self._out / "suite.json").is_file():
                run_id = json.loads((self._out / "suite.json").read_text())["run_id"]
            if run_id is not None:
                ids = subprocess.run(
                    ["docker", "ps", "-q", "--filter", f"label=harness-probe.run={run_id}",
                     "--filter", "label=harness-probe.role=proxy"],
                    capture_output=True, text=True, check=False,
                ).stdout.split()  # fmt: skip
                if ids:
                    stats = subprocess.run(
                        ["docker", "stats", "--no-stream", "--format", "{{.MemUsage}}", *ids],
                        capture_output=True, text=True, check=False,
                    ).stdout  # fmt: skip
                    for value, unit in re.findall(r"^([\d.]+)(KiB|MiB|GiB|B) /", stats, re.MULTILINE):
                        self.samples.append(float(value) * _MIB[unit])
            time.sleep(1)


def _proxy_limits(run: HostileRun) -> dict[str, object]:
    limits: dict[str, object] = json.loads((run.out / "runtime.json").read_text())["limits"]["proxy"]
    return limits


def _assert_proxy_hardened(run: HostileRun, memory: ProxyMemory) -> None:
    limits = _proxy_limits(run)
    # Nothing outside the run directory: the proxy's root is read-only and its one writable folder in memory, capped.
    assert limits["read_only_rootfs"] is True and limits["writable"] == {"/probe/witness": "96m"}, limits
    assert memory.samples, "the proxy's memory was never sampled"
    print(f"proxy memory: peak {max(memory.samples):.1f} MiB over {len(memory.samples)} samples")
    assert max(memory.samples) < PROXY_MEMORY_LIMIT_MIB


def test_16_mib_bodies_in_a_loop_stop_at_the_witness_budget(images: Images, tmp_path: Path) -> None:
    with ProxyMemory(tmp_path / "out") as memory:
        run = _run("hostile-body-flood", tmp_path / "out")
    _assert_contained(run)
    _assert_proxy_hardened(run, memory)
    size = (run.out / "witness.jsonl").stat().st_size
    # 24 x 16 MiB were sent (384 MiB): the witness holds the bodies up to the budget, then their hashes.
    assert size < WITNESS_BUDGET + (1 << 20), size
    events = read_witness(run.out / "witness.jsonl").events
    notes = [e for e in events if e["event"] == "violation"]
    assert [n["code"] for n in notes] == ["witness_budget"]
    withheld = [e for e in events if e["event"] == "attempt" and "request_withheld" in e]
    assert len(withheld) >= 20 and all(e["request"] is None for e in withheld)
    assert all(e["request_withheld"]["size"] == 16 * 1024 * 1024 for e in withheld[:10])
    failed = {c["id"] for c in run.result["checks"] if c["status"] == "fail"}
    assert "witness.no_violations" in failed and run.result["execution"]["status"] == "exited"
    print(f"witness {size} bytes; run dir below {sum(p.stat().st_size for p in run.out.rglob('*') if p.is_file())}")


def test_a_1_5_gib_chunked_body_is_refused_before_it_is_buffered(images: Images, tmp_path: Path) -> None:
    with ProxyMemory(tmp_path / "out") as memory:
        run = _run("hostile-chunked-body", tmp_path / "out")
    _assert_contained(run)
    _assert_proxy_hardened(run, memory)
    events = read_witness(run.out / "witness.jsonl").events
    (violation,) = [e for e in events if e["event"] == "violation"]
    assert violation["code"] == "body_over_cap" and "refused while it arrived" in violation["detail"]
    refused = [e for e in events if e["event"] == "attempt" and e["attempt_id"] == violation["attempt_id"]]
    assert [(a["kind"], a["status"]) for a in refused] == [("rejected", 413)]
    # The proxy lived on: the honest run after the body was played to its end.
    assert any(e["event"] == "attempt" and e.get("reply_kind") == "final_answer" for e in events)
    assert "hostile: streamed" in (run.out / "harness.log").read_text()
