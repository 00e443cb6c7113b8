"""Integration fixtures: a real Docker engine (or a plain failure saying there is none) and built images."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from orchestrator.evidence import load_json
from orchestrator.images import BuildOptions, BuiltImage, ImageBuilder, default_extra_ca
from orchestrator.runtime import Engine, EngineUnavailable

HP = str(Path(sys.executable).with_name("harness-probe"))
# testcontainers' reaper image would have to be pulled; our tests remove what they start themselves.
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")


# The scenarios a test needs when its question is about the runtime or the run (Podman and Docker give one verdict
# table, Slurm's shards merge into one run), not about the scenarios: one of each way a reply reaches the harness
# (whole, failed and retried, delayed, withheld, cut, refused for good, a 200 it cannot use) and the one fault timed by
# the proxy's clock (a quota window). The whole catalogue (20) runs in test_catalogue_reference, in every protocol
# mode; docs/performance.md says why this subset keeps the integration phase inside its budget.
RUNTIME_SUBSET = (
    "tool_success",
    "retry_429",
    "server_timeout",
    "harness_deadline",
    "stream_cut",
    "model_error",
    "sse_malformed",
    "quota_window",
)
RUNTIME_SUBSET_ARGS = tuple(a for s in RUNTIME_SUBSET for a in ("-s", s))


@pytest.fixture(scope="session")
def engine() -> Engine:
    try:
        return Engine.connect(docker_env={k: v for k, v in os.environ.items() if k.startswith("DOCKER_")})
    except EngineUnavailable as exc:
        pytest.fail(f"integration tests need a Docker engine: {exc}", pytrace=False)


@dataclass
class Images:
    proxy: BuiltImage
    reference: BuiltImage
    base: BuiltImage


@pytest.fixture(scope="session")
def images(engine: Engine) -> Images:
    builder = ImageBuilder(engine, BuildOptions(extra_ca=default_extra_ca()))
    return Images(builder.build("proxy"), builder.build("reference"), builder.build("base"))


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str


def hp(*args: str, timeout: float = 600) -> CliResult:
    proc = subprocess.run([HP, *args], capture_output=True, text=True, timeout=timeout, check=False)
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


def labelled(kind: str, run_id: str) -> list[str]:
    """What `docker <kind> ls` shows with the run's label (the user-visible leak check)."""
    cmd = {
        "ps": ["docker", "ps", "-a"],
        "network": ["docker", "network", "ls"],
        "volume": ["docker", "volume", "ls"],
    }
    out = subprocess.run(
        [*cmd[kind], "-q", "--filter", f"label=harness-probe.run={run_id}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return out.split()


def partial_summary(out: Path) -> dict[str, Any] | None:
    """The summary a run stopped by Ctrl-C or SIGTERM leaves: None when it was stopped before its episodes began
    (no suite.json then), else marked interrupted, with no episode judged into a fail by the stop."""
    path = out / "summary.json"
    if not path.exists():
        assert not (out / "suite.json").exists(), "a run stopped once its episodes had begun wrote no summary"
        return None
    summary: dict[str, Any] = load_json(path, "probe-summary/v1")
    assert summary["verdict"] == "interrupted" and summary["exit_code"] == 130, summary["verdict"]
    assert summary["counts"]["fail"] == 0, summary["counts"]
    return summary


@pytest.fixture
def out_dir(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "out"
