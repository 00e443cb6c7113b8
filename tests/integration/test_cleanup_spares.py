"""`harness-probe cleanup` on a real engine spares a run whose owner process is alive unless --force, and says so."""

from __future__ import annotations

import secrets
import subprocess
from collections.abc import Iterator

import docker
import docker.errors
import pytest
from typer.testing import CliRunner

from orchestrator.cli import app
from orchestrator.runtime.spec import OWNER_LABEL, RUN_LABEL, Owner


@pytest.fixture
def client() -> Iterator[docker.DockerClient]:
    try:
        c = docker.from_env()
        c.ping()
    except docker.errors.DockerException as exc:
        pytest.skip(f"no Docker engine answers: {exc}")
    yield c
    c.close()


def _dead_owner() -> str:
    # A process of ours that has exited: its pid is gone (or, if reused, belongs to a younger process).
    done = subprocess.run(["sh", "-c", "echo $$; cat /proc/$$/stat"], capture_output=True, text=True, check=True)
    pid, stat = done.stdout.split("\n", 1)
    started = stat.rsplit(")", 1)[1].split()[19]
    here = Owner.this_process()
    return Owner(here.host, int(pid), started).label()


def _volume(client: docker.DockerClient, run: str, owner: str) -> str:
    name = f"hp-test-cleanup-{run}"
    client.volumes.create(name, labels={RUN_LABEL: run, OWNER_LABEL: owner})
    return name


def _exists(client: docker.DockerClient, name: str) -> bool:
    try:
        client.volumes.get(name)
    except docker.errors.NotFound:
        return False
    return True


def test_a_live_run_is_spared_a_dead_one_removed_and_force_removes_the_live_one(client: docker.DockerClient) -> None:
    live_run, dead_run = f"live-{secrets.token_hex(4)}", f"dead-{secrets.token_hex(4)}"
    live_owner = Owner.this_process().label()  # the CLI runs in this process: its owner is alive
    live, dead = _volume(client, live_run, live_owner), _volume(client, dead_run, _dead_owner())
    runner = CliRunner()
    try:
        spared = runner.invoke(app, ["cleanup", "--runtime", "docker", "--run-id", live_run])
        assert spared.exit_code == 0, spared.output
        assert _exists(client, live)
        assert f"spared run {live_run}: its owner process {live_owner} may be alive (--force removes it)" in (
            spared.output
        )
        assert "0 volumes removed" in spared.output

        removed = runner.invoke(app, ["cleanup", "--runtime", "docker", "--run-id", dead_run])
        assert removed.exit_code == 0, removed.output
        assert not _exists(client, dead)
        assert "1 volumes removed" in removed.output and "spared" not in removed.output

        forced = runner.invoke(app, ["cleanup", "--runtime", "docker", "--run-id", live_run, "--force"])
        assert forced.exit_code == 0, forced.output
        assert not _exists(client, live)
        assert "spared" not in forced.output
    finally:
        for name in (live, dead):
            if _exists(client, name):
                client.volumes.get(name).remove(force=True)


def test_help_warns_about_force() -> None:
    out = CliRunner().invoke(app, ["cleanup", "--help"], terminal_width=200).output
    assert "--force" in out and "kills" in out and "spared" in out
