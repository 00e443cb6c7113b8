"""Benchmark: the offline audit at scale: one rollout of 100,000 tool calls; 1,000 and 10,000 saved episodes.

Run with `make bench`, on a quiet machine. Each measurement runs in its own process (so peak RSS is its own) and
prints wall and CPU seconds against its target; targets live here, not in timed tests.

The 100,000 tool calls are spread over as many model calls as a scenario a run accepts can script (at most 10,000
steps: 11 calls a reply, 9,092 model calls with the final answer), every event at a time of its own as in a run;
the audit must check them, not stop at the scenario (an `error` fails the bench). The rollout is audited from two
sources: one marker file per tool call (100,000 files, more than a run ever saves), and the episode as a run saves
it, with the markers its collection's file cap let it copy. Its
target ("audits in under 10 s") is the wait, the wall time, printed beside its CPU split into user and system
time. The audit reads the markers in place (one file written for them all, orchestrator/audit_copy.py): system
time is the copies of the witness and rollout, the walk of the markers folder, and this VM zeroing the pages of
fresh memory. Peak RSS is printed against its target (< 512 MiB).
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from orchestrator.audit import audit
from orchestrator.checks import Evidence, Status, read_witness, run_checks, scope_of
from orchestrator.evidence.validate import schema_tree
from orchestrator.logs import LogFormat, configure_logging
from orchestrator.output import write_json
from orchestrator.runtime.collect import CollectLimits
from tests.bench import table
from tests.synthetic import synthetic_episode

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "episodes" / "tool_success"
ROLLOUT_TARGET_SECONDS = 10.0
ROLLOUT_TARGET_MIB = 512
# Flat: ten times the episodes may cost at most this much more peak RSS than the first thousand.
EPISODE_MEMORY_GROWTH = 1.2


def _peak_mib() -> float:
    """This process's peak RSS. Linux's VmHWM, which starts again at exec: getrusage's maxrss is kept across exec,
    so a child started by a large process would report its parent's peak."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _since(t: tuple[float, float]) -> str:
    wall, cpu = time.perf_counter() - t[0], time.process_time() - t[1]
    return f"{wall:.1f} s wall, {cpu:.1f} s CPU"


def bench_many_episodes(n: int, tmp: Path) -> None:
    src = tmp / "saved"
    for i in range(n):
        shutil.copytree(FIXTURE, src / "reference" / f"ep{i:05d}")
    t = _clock()
    res = audit(src, tmp / "audited")
    cpu = time.process_time() - t[1]
    assert res.exit_code == 0, res.exit_code
    print(f"audit of {n} episodes: {_since(t)} ({1000 * cpu / n:.1f} ms CPU/episode), peak RSS {_peak_mib():.0f} MiB")
    table.record(f"audit of {n:,} episodes", f"{1000 * cpu / n:.1f} ms CPU per episode", "-", "-")


def _per_reply(n: int) -> int:
    """The fewest tool calls a reply can hold for n calls in a scenario a run accepts: as many model calls as the
    scenario's cap on steps allows (one of them the final answer), each a model call and an attempt on the wire."""
    steps: int = schema_tree("probe-scenario/v1")["properties"]["script"]["maxItems"]
    return max(1, -(-n // (steps - 1)))


def bench_big_rollout(n: int, tmp: Path, as_saved: bool = False) -> None:
    """Audit one n-call episode. as_saved: only the markers a run's collection copies (the file cap counts the
    witness and the markers folder too), not one per call."""
    scenario, rollout, events, markers = synthetic_episode(n, _per_reply(n))
    saved = dict(list(markers.items())[: CollectLimits().max_files - 2]) if as_saved else markers
    ep = tmp / "saved" / "reference" / "big"
    (ep / "markers").mkdir(parents=True)
    # Each file in its real writer's form (Scenario.provider_json, write_json, proxy_addons/witness.py). The rollout
    # (139 MB here) beside the witness (133 MB) is past the collection's 256 MiB: a run writes it itself, and the
    # audit copies it under a cap of its own, as it must.
    (ep / "scenario.json").write_bytes(json.dumps(scenario, indent=2, sort_keys=True).encode())
    write_json(ep / "rollout.json", rollout)
    (ep / "witness.jsonl").write_bytes(
        b"".join(json.dumps(e, allow_nan=False, separators=(",", ":")).encode("ascii") + b"\n" for e in events)
    )
    for name, token in saved.items():
        (ep / "markers" / name).write_text(token)
    t = _clock()
    w = read_witness(ep / "witness.jsonl")
    read = _since(t)
    ev = Evidence(scenario, rollout=copy.deepcopy(rollout), witness=w, markers=markers)
    t = _clock()
    results = run_checks(ev, scope_of(scenario))
    checks = _since(t)
    failed = [r.id for r in results if r.status == Status.FAIL]
    assert not failed, failed
    lines, copied, replies = len(events), len(saved), len(rollout["model_calls"])
    del w, ev, results, scenario, rollout, events, markers, saved
    a = _audit_alone(tmp / "saved", tmp / "audited")
    # One marker per tool call: past the collection's file cap (20,000) and the marker read cap (10,000), the
    # markers are not saved, copied or read, so the audit of this honest rollout fails exactly that check. An
    # episode the audit could not check at all (`error`: a scenario past its caps, say) measures no checks.
    failed = set(a["failed"])
    assert a["verdict"] in ("pass", "fail") and a["checks"] > 0, (a["verdict"], a["error"][:300])
    assert failed <= {"witness.tools_executed"}, failed
    met = "met" if a["wall"] < ROLLOUT_TARGET_SECONDS else "NOT met"
    cpu = a["user"] + a["system"]
    rss_met = "met" if a["rss"] < ROLLOUT_TARGET_MIB else "NOT met"
    source = f"{copied:,} marker files, as a run saves it" if as_saved else "one marker file per tool call"
    print(
        f"rollout of {n} tool calls in {replies} model calls ({lines} witness lines; {source}): read+validate "
        f"witness {read}; all checks "
        f"{checks}; whole audit {a['wall']:.1f} s wall (target < {ROLLOUT_TARGET_SECONDS:.0f} s: {met}), {cpu:.1f} s "
        f"CPU ({a['user']:.1f} user + {a['system']:.1f} system), peak RSS {a['rss']:.0f} MiB (target < "
        f"{ROLLOUT_TARGET_MIB} MiB: {rss_met}); verdict {a['verdict']} (failed: {', '.join(sorted(failed)) or 'none'}; "
        "markers past the collection caps are not read)"
    )
    table.record(
        f"audit of one {n:,}-call rollout ({'as a run saves it' if as_saved else 'one marker per call'}): wall",
        f"{a['wall']:.1f} s wall ({cpu:.1f} s CPU)",
        f"< {ROLLOUT_TARGET_SECONDS:.0f} s",
        met,
    )
    table.record(
        f"audit of one {n:,}-call rollout ({'as a run saves it' if as_saved else 'one marker per call'}): peak RSS",
        f"{a['rss']:.0f} MiB",
        f"< {ROLLOUT_TARGET_MIB} MiB",
        rss_met,
    )


def _audit_alone(src: Path, out: Path) -> dict[str, Any]:
    """The audit of src in a process of its own, as a user's `harness-probe audit` runs (its imports not counted):
    its peak RSS is its own, not the bench's."""
    res = subprocess.run(
        [sys.executable, "-m", "tests.bench.audit_scale", "audit", str(src), str(out)],
        capture_output=True,
        text=True,
        check=True,
    )
    found: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    return found


def audit_alone(src: Path, out: Path) -> None:
    t, times = _clock(), os.times()
    res = audit(src, out)
    wall = time.perf_counter() - t[0]
    now = os.times()
    result = res.results[0]
    print(
        json.dumps(
            {
                "wall": wall,
                "user": now.user - times.user,
                "system": now.system - times.system,
                "rss": _peak_mib(),
                "verdict": result["verdict"],
                "checks": len(result["checks"]),
                "error": str(result["execution"].get("error") or ""),
                "failed": [c["id"] for c in result["checks"] if c["status"] == "fail"],
            }
        )
    )


# Set by the parent: its children's files are all removed at the end, not one child's between two others. A child
# that creates tens of thousands of files right after another removed as many would measure the file system's
# passes over the freed inodes, not the audit.
TMP_ENV = "HARNESS_PROBE_BENCH_TMP"


def _child(kind: str, n: int) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "tests.bench.audit_scale", kind, str(n)], capture_output=True, text=True, check=True
    ).stdout.strip()
    print(out, flush=True)
    return out


def _rss(line: str) -> float:
    return float(line.rpartition("peak RSS ")[2].split()[0])


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "audit":
        configure_logging(LogFormat.human, -1)
        audit_alone(Path(sys.argv[2]), Path(sys.argv[3]))
        return
    if len(sys.argv) == 3 and sys.argv[1] in ("rollout", "rollout-saved", "episodes"):
        configure_logging(LogFormat.human, -1)  # warnings only: one line per episode would swamp the figures
        n, kind = int(sys.argv[2]), sys.argv[1]
        with contextlib.ExitStack() as stack:
            parent = os.environ.get(TMP_ENV)
            d = Path(tempfile.mkdtemp(dir=parent) if parent else stack.enter_context(tempfile.TemporaryDirectory()))
            if kind == "episodes":
                bench_many_episodes(n, d)
            else:
                bench_big_rollout(n, d, as_saved=kind == "rollout-saved")
        return
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    counts = [int(x) for x in sys.argv[2:]] or [1000, 10_000]
    with tempfile.TemporaryDirectory() as root:
        os.environ[TMP_ENV] = root
        _child("rollout", calls)
        _child("rollout-saved", calls)
        peaks = [_rss(_child("episodes", n)) for n in counts]
    if len(peaks) > 1:
        growth = peaks[-1] / peaks[0]
        met = "met" if growth <= EPISODE_MEMORY_GROWTH else "NOT met"
        print(
            f"audit memory, {counts[0]:,} -> {counts[-1]:,} episodes: peak RSS {peaks[0]:.0f} -> {peaks[-1]:.0f} MiB "
            f"(x{growth:.2f}; target: flat, i.e. peak RSS at {counts[-1]:,} within x{EPISODE_MEMORY_GROWTH} of "
            f"{counts[0]:,}: {met})"
        )
        table.record(
            f"audit memory, {counts[0]:,} -> {counts[-1]:,} episodes",
            f"peak RSS {peaks[0]:.0f} -> {peaks[-1]:.0f} MiB (x{growth:.2f})",
            f"within x{EPISODE_MEMORY_GROWTH}",
            met,
        )


if __name__ == "__main__":
    main()
