"""Podman, rootful and rootless, for real: the reference catalogue gives the verdict table Docker gives, a run
killed mid-episode leaves nothing once `cleanup` ran, and runtime.json says which runtime ran and how."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harnesses.golden import verdict_table
from tests.integration.conftest import HP, RUNTIME_SUBSET_ARGS, Images, engine, images
from tests.integration.runtimes import (
    podman_labelled,
    podman_missing,
    rootless_missing,
    start_rootless_service,
    stop_service,
)

pytestmark = [pytest.mark.docker, pytest.mark.skipif(podman_missing() is not None, reason=str(podman_missing()))]
__all__ = ["engine", "images"]  # fixtures, re-exported so pytest finds them here

ROOT_SOCKET = "unix:///run/podman/podman.sock"


def hp_env(*args: str, env: dict[str, str], timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HP, *args], capture_output=True, text=True, timeout=timeout, check=False, env={**os.environ, **env}
    )


@pytest.fixture(scope="module")
def rootless() -> Iterator[str]:
    reason = rootless_missing()
    if reason:
        pytest.skip(reason)
    url, proc = start_rootless_service()
    try:
        yield url
    finally:
        stop_service(proc)


def catalogue(out: Path, env: dict[str, str]) -> dict[str, object]:
    res = hp_env("run", "-H", "reference", *RUNTIME_SUBSET_ARGS, "-o", str(out), env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    table = verdict_table(out, "reference")
    table.pop("version")
    return table


def test_reference_catalogue_is_the_same_on_docker_and_podman_rootful_and_rootless(
    images: Images, rootless: str, tmp_path: Path
) -> None:
    docker_table = catalogue(tmp_path / "docker", {"HARNESS_PROBE_RUNTIME": "docker"})
    rootful_table = catalogue(tmp_path / "podman", {"HARNESS_PROBE_RUNTIME": "podman"})
    rootless_table = catalogue(tmp_path / "rootless", {"HARNESS_PROBE_RUNTIME": "podman", "CONTAINER_HOST": rootless})
    assert rootful_table == docker_table
    assert rootless_table == docker_table
    runtime = json.loads((tmp_path / "podman" / "reference" / "tool_success" / "runtime.json").read_text())
    assert runtime["engine"]["runtime"] == "podman" and runtime["engine"]["rootless"] is False
    assert runtime["limits"]["harness"]["network"] == "container:proxy"
    assert runtime["limits"]["proxy"]["network"] == "none"
    rl = json.loads((tmp_path / "rootless" / "reference" / "tool_success" / "runtime.json").read_text())
    assert rl["engine"]["rootless"] is True
    # Version probes clear the image's entrypoint and write to a tmpfs home: both are said differently to Podman.
    dk = json.loads((tmp_path / "docker" / "reference" / "tool_success" / "runtime.json").read_text())
    assert dk["proxy"]["version"].startswith("Mitmproxy: ") and dk["harness"]["version"]
    for doc in (runtime, rl):
        assert (doc["proxy"]["version"], doc["harness"]["version"]) == (
            dk["proxy"]["version"],
            dk["harness"]["version"],
        )
    # Rootless on cgroup v1 (this machine) cannot apply limits: runtime.json shows what applied, not what was asked.
    assert "memory_bytes" in rl["limits"]["harness"]
    for out, url in ((tmp_path / "podman", ROOT_SOCKET), (tmp_path / "rootless", rootless)):
        run_id = json.loads((out / "summary.json").read_text())["run_id"]
        assert podman_labelled(url, run_id) == []


def test_a_run_killed_mid_episode_leaves_nothing_after_cleanup(images: Images, tmp_path: Path) -> None:
    out = tmp_path / "killed"
    env = {**os.environ, "HARNESS_PROBE_RUNTIME": "podman"}
    proc = subprocess.Popen(
        [HP, "run", "-H", "reference", "-s", "harness_deadline", "-o", str(out)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 300
        # Mid-episode: the harness container of the run exists (it is in its 15 s request timeout).
        while True:
            assert proc.poll() is None and time.monotonic() < deadline, "the run ended before it could be killed"
            suite = out / "suite.json"
            if suite.is_file():
                run_id = json.loads(suite.read_text())["run_id"]
                if any(x.endswith("-harness") for x in podman_labelled(ROOT_SOCKET, run_id)):
                    break
            time.sleep(0.5)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert podman_labelled(ROOT_SOCKET, run_id) != []  # SIGKILL: nothing could clean up
    res = hp_env("cleanup", "--runtime", "podman", "--run-id", run_id, env={})
    assert res.returncode == 0, res.stderr
    assert "podman:" in res.stdout
    assert podman_labelled(ROOT_SOCKET, run_id) == []
    assert not (out / "summary.json").exists()


def test_doctor_lists_podman_as_answering() -> None:
    res = hp_env("doctor", "--json", env={})
    found = {r["name"]: r for r in json.loads(res.stdout)["runtimes"]}
    assert found["podman"]["answers"] is True, found["podman"]
    assert found["apptainer"]["answers"] is False and found["apptainer"]["reasons"]
