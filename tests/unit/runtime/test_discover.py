"""Runtime discovery as `doctor` reports it: every runtime gets a status and, when it does not answer, a reason."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence

import pytest

from orchestrator.runtime import discover as d


def runner(stdout: str = "", returncode: int = 0, stderr: str = "", hang: bool = False) -> d.Runner:
    def run(cmd: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
        if hang:
            raise subprocess.TimeoutExpired(list(cmd), timeout)
        return subprocess.CompletedProcess(list(cmd), returncode, stdout, stderr)

    return run


def podman_info(rootless: bool, cgroup: str) -> str:
    return json.dumps(
        {
            "host": {"security": {"rootless": rootless}, "cgroupVersion": cgroup, "remoteSocket": {"path": "/x.sock"}},
            "version": {"Version": "4.3.1"},
        }
    )


def test_podman_rootless_on_cgroup_v1_says_limits_cannot_apply(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(d.shutil, "which", lambda name: f"/usr/bin/{name}")
    s = d.probe_podman(runner(podman_info(True, "v1")))
    assert s.answers and s.rootless and s.version == "4.3.1"
    assert any("cgroup v1" in r for r in s.reasons)


def test_podman_rootful_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(d.shutil, "which", lambda name: f"/usr/bin/{name}")
    s = d.probe_podman(runner(podman_info(False, "v2")))
    assert s.answers and s.rootless is False and s.reasons == []


@pytest.mark.parametrize(
    ("run", "reason"),
    [
        (runner(returncode=125, stderr="cannot connect"), "failed: cannot connect"),
        (runner(hang=True), "did not answer within"),
        (runner(stdout="not json"), "not JSON"),
    ],
)
def test_podman_that_does_not_answer_says_why(monkeypatch: pytest.MonkeyPatch, run: d.Runner, reason: str) -> None:
    monkeypatch.setattr(d.shutil, "which", lambda name: f"/usr/bin/{name}")
    s = d.probe_podman(run)
    assert not s.answers
    assert any(reason in r for r in s.reasons), s.reasons


def test_missing_binaries_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(d.shutil, "which", lambda name: None)
    for probe in (d.probe_podman, d.probe_apptainer):
        s = probe(runner())
        assert not s.answers and s.binary is None
        assert "not installed" in s.reasons[0]


def test_apptainer_needs_user_namespaces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(d.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(d, "user_namespaces_reason", lambda: "user namespaces are disabled")
    s = d.probe_apptainer(runner(stdout="apptainer version 1.4.1\n"))
    assert not s.answers and s.version == "apptainer version 1.4.1"
    assert s.reasons == ["user namespaces are disabled"]


def test_first_answering_keeps_the_documented_order() -> None:
    statuses = [d.RuntimeStatus("docker", None, False), d.RuntimeStatus("podman", "/p", True)]
    chosen = d.first_answering(statuses)
    assert chosen is not None and chosen.name == "podman"
    assert d.ORDER == ("docker", "podman", "apptainer")
