"""Benchmark: per-episode orchestration overhead on each runtime that answers, beside two bare container starts
of the same runtime, measured side by side in one run.

Overhead = an episode's wall time (as the CLI runs it, `run -H reference -s tool_success`) minus the time the
harness itself ran (execution.seconds in its scenario_result.json). Run with `make bench`; the figures are
printed, never asserted.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from orchestrator.images import BuildOptions, ImageBuilder, default_extra_ca
from orchestrator.runtime import Engine, EngineUnavailable
from orchestrator.runtime.select import open_engine

HP = str(Path(sys.executable).with_name("harness-probe"))
ROUNDS = 3


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


def main() -> None:
    print(f"per-episode orchestration overhead (median of {ROUNDS}; reference / tool_success, images cached)")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for runtime in ("docker", "podman"):
            try:
                engine = open_engine(runtime)
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
            print(
                f"  {runtime}: two bare starts {bare:.2f} s; episode {wall:.2f} s, of which orchestration "
                f"{overhead:.2f} s = {overhead / bare:.1f}x two bare starts"
            )


if __name__ == "__main__":
    main()
