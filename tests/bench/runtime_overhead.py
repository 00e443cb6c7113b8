"""Benchmark: per-episode orchestration overhead on each runtime that answers, beside two bare container starts
of the same runtime, measured side by side in one run; then the reference catalogue with --jobs 1 on each
runtime, and on Docker --jobs 1 and --jobs 2 alternated twice (medians).

Overhead = an episode's wall time (as the CLI runs it, `run -H reference -s tool_success`) minus the time the
harness itself ran (execution.seconds in its scenario_result.json). The warm-up run asks the images' versions,
which later runs take from the version cache (as every run after a user's first does). In a catalogue, the
per-episode overhead is (wall - the harnesses' seconds) / episodes, CLI start-up and reports included. Run with
`make bench`; the figures are printed beside their targets, never asserted. The catalogues also print the CPU
seconds per episode by who spent them (tests/bench/cpu_meter.py), which the machine's load does not inflate.

The package's bytecode is compiled first, as installing the wheel does: with PYTHONDONTWRITEBYTECODE set (as on
some CI and sandbox machines) an editable checkout would otherwise compile every module at every start.
"""

from __future__ import annotations

import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import orchestrator
from orchestrator.images import BuildOptions, ImageBuilder, default_extra_ca
from orchestrator.runtime import Engine, EngineUnavailable
from orchestrator.runtime.select import RuntimeSettings, open_engine
from tests.bench import table
from tests.bench.cpu_meter import CpuSeconds, run_measured

HP = str(Path(sys.executable).with_name("harness-probe"))
ROUNDS = 3
TARGET_OVERHEAD = 1.5  # x two bare starts
TARGET_JOBS2 = 0.6  # --jobs 2 wall / --jobs 1 wall
Catalogue = tuple[float, float, int, CpuSeconds]  # wall, the harnesses' own seconds, episodes, CPU seconds


def bare_starts(engine: Engine, tag: str) -> float:
    """Two `run --rm base true`, one after the other, as a user would start two containers (seconds)."""
    t0 = time.perf_counter()
    for _ in range(2):
        engine.run_once_bare(tag)
    return time.perf_counter() - t0


def episode(runtime: str, tmp: Path, i: int) -> tuple[float, float]:
    out = tmp / f"{runtime}-{i}"
    t0 = time.perf_counter()
    res = subprocess.run(
        [HP, "-q", "run", "-H", "reference", "-s", "tool_success", "-o", str(out), "--runtime", runtime],
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - t0
    if res.returncode != 0:
        raise RuntimeError(f"{runtime} episode failed ({res.returncode}): {res.stderr[-1500:]}")
    result = json.loads((out / "reference" / "tool_success" / "scenario_result.json").read_text())
    return wall, float(result["execution"]["seconds"])


PHASES = (  # (the log event that ends a phase, the phase's name); the first phase ends at the first log line
    ("episode", "images and version cache"),
    ("harness started", "pod set-up up to the harness's start (proxy to ready)"),
    ("collecting", "the harness's run"),
    ("episode checked", "collection, normalizing and checks"),
)


def breakdown(runtime: str, tmp: Path) -> str:
    """Where one episode's wall time goes, from the CLI's own log clock (one run, JSON logs): each phase's
    seconds, in order, ending with the reports and the process's exit."""
    out = tmp / f"{runtime}-phases"
    t0 = time.time()
    res = subprocess.run(
        [
            HP,
            "--log-format",
            "json",
            "run",
            "-H",
            "reference",
            "-s",
            "tool_success",
            "-o",
            str(out),
            "--runtime",
            runtime,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    t_end = time.time()
    if res.returncode != 0:
        raise RuntimeError(f"{runtime} episode failed ({res.returncode}): {res.stderr[-1500:]}")
    at: dict[str, float] = {}
    first: float | None = None
    for line in (res.stdout + res.stderr).splitlines():
        if not line.startswith("{"):
            continue
        entry = json.loads(line)
        t = datetime.fromisoformat(entry["timestamp"].replace("Z", "+00:00")).timestamp()
        first = t if first is None else first
        at.setdefault(entry["event"], t)
    marks = [("start-up and imports", first)] + [(name, at.get(event)) for event, name in PHASES]
    parts, prev = [], t0
    for name, t in marks:
        if t is None:
            return f"no breakdown: the log has no {name!r} line"
        parts.append(f"{name} {t - prev:.2f}")
        prev = t
    parts.append(f"reports and exit {t_end - prev:.2f}")
    return f"one episode ({t_end - t0:.2f} s): " + ", ".join(parts) + " s"


def catalogue(engine: Engine, out: Path, jobs: int) -> Catalogue:
    """The reference harness on every scenario: wall seconds, the harnesses' own seconds, episodes, CPU seconds."""
    argv = [HP, "-q", "run", "-H", "reference", "-o", str(out), "--runtime", engine.name, "--jobs", str(jobs)]
    res, wall, cpu = run_measured(argv, engine.client)
    if res.returncode != 0:
        raise RuntimeError(f"catalogue --jobs {jobs} failed ({res.returncode}): {res.stderr[-1500:]}")
    results = [json.loads(p.read_text()) for p in sorted(out.glob("reference/*/scenario_result.json"))]
    return wall, sum(float(r["execution"]["seconds"]) for r in results), len(results), cpu


def _mark(ok: bool) -> str:
    return "met" if ok else "NOT met on this machine"


def main() -> None:
    compileall.compile_dir(Path(orchestrator.__file__).parent, quiet=1)
    print(f"per-episode orchestration overhead (median of {ROUNDS}; reference / tool_success, images cached)")
    bare_of: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for runtime in ("docker", "podman"):
            try:
                engine = open_engine(RuntimeSettings.from_environ(os.environ, runtime)).runtime
            except EngineUnavailable as exc:
                print(f"  {runtime}: skipped ({str(exc).splitlines()[0]})")
                continue
            assert isinstance(engine, Engine)
            builder = ImageBuilder(engine, BuildOptions(extra_ca=default_extra_ca()))
            base = builder.build("base").tag
            builder.build("reference")
            builder.build("proxy")
            episode(runtime, tmp, -1)  # warm: version probes' page cache, imports
            bare = statistics.median(bare_starts(engine, base) for _ in range(ROUNDS))
            runs = [episode(runtime, tmp, i) for i in range(ROUNDS)]
            wall = statistics.median(w for w, _ in runs)
            overhead = statistics.median(w - h for w, h in runs)
            bare_of[runtime] = bare
            print(
                f"  {runtime}: two bare starts {bare:.2f} s; episode {wall:.2f} s, of which orchestration "
                f"{overhead:.2f} s = {overhead / bare:.1f}x two bare starts (target {TARGET_OVERHEAD}x: "
                f"{_mark(overhead / bare <= TARGET_OVERHEAD)})"
            )
            print(f"    {breakdown(runtime, tmp)}")
            table.record(
                f"one episode on {runtime}: orchestration / two bare container starts",
                f"{overhead:.2f} / {bare:.2f} s = {overhead / bare:.1f}x",
                f"{TARGET_OVERHEAD}x",
                _mark(overhead / bare <= TARGET_OVERHEAD),
            )
        for runtime in bare_of:
            engine = open_engine(RuntimeSettings.from_environ(os.environ, runtime)).runtime
            assert isinstance(engine, Engine)
            # On Docker --jobs 1 and --jobs 2 alternate, twice, so a change in the load weighs on both alike.
            ones: list[Catalogue] = []
            twos: list[Catalogue] = []
            for r in range(2 if runtime == "docker" else 1):
                ones.append(catalogue(engine, tmp / f"{runtime}-jobs1-{r}", 1))
                if runtime == "docker":
                    twos.append(catalogue(engine, tmp / f"{runtime}-jobs2-{r}", 2))
            _report_catalogue(runtime, bare_of[runtime], ones, twos)


def _report_catalogue(
    runtime: str,
    bare: float,
    ones: list[Catalogue],
    twos: list[Catalogue],
) -> None:
    n = ones[0][2]
    one = statistics.median(w for w, _, _, _ in ones)
    per = statistics.median((w - h) / n for w, h, _, _ in ones)
    print(f"reference catalogue on {runtime} ({n} episodes, load average {os.getloadavg()[0]:.1f} on {_cpus()} CPUs)")
    print(
        f"  --jobs 1 (median of {len(ones)}): {one:.1f} s, of which the harnesses ran "
        f"{statistics.median(h for _, h, _, _ in ones):.1f} s; orchestration {per:.2f} s per episode = "
        f"{per / bare:.1f}x two bare starts (target {TARGET_OVERHEAD}x: {_mark(per / bare <= TARGET_OVERHEAD)})"
    )
    print(f"    {ones[-1][3].line(n)}")
    table.record(
        f"reference catalogue on {runtime}, --jobs 1: orchestration per episode / two bare starts",
        f"{per:.2f} / {bare:.2f} s = {per / bare:.1f}x",
        f"{TARGET_OVERHEAD}x",
        _mark(per / bare <= TARGET_OVERHEAD),
    )
    if not twos:
        return
    two = statistics.median(w for w, _, _, _ in twos)
    walls = ", ".join(f"{o[0]:.1f}/{t[0]:.1f}" for o, t in zip(ones, twos, strict=True))
    print(
        f"  --jobs 2 (median of {len(twos)}): {two:.1f} s = {two / one:.2f}x the --jobs 1 wall (target <= "
        f"{TARGET_JOBS2}x: {_mark(two / one <= TARGET_JOBS2)}); pairs --jobs 1/--jobs 2 as run: {walls} s"
    )
    print(f"    {twos[-1][3].line(n)}")
    table.record(
        f"reference catalogue on {runtime}: --jobs 2 wall / --jobs 1 wall",
        f"{two:.1f} / {one:.1f} s = {two / one:.2f}x",
        f"<= {TARGET_JOBS2}x",
        _mark(two / one <= TARGET_JOBS2),
    )


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


if __name__ == "__main__":
    main()
