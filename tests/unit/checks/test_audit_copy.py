"""The audit's copy with its markers copied by a child: the copy a sequential one makes, and nothing left behind."""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path
from typing import Any

import pytest

import orchestrator.audit_copy as audit_copy
from orchestrator.audit import audit
from orchestrator.audit_copy import CopyFailed, EvidenceCopy, copy_evidence
from orchestrator.runtime.collect import Collection, CollectLimits, Finding
from tests.unit.checks.conftest import FIXTURES

MANY = audit_copy.CHILD_FROM + 88


def _episode(tmp_path: Path, markers: int = MANY) -> Path:
    """The tool_success fixture with `markers` marker files, a link among them, and a rollout past a cap below."""
    ep = tmp_path / "saved" / "reference" / "tool_success"
    shutil.copytree(FIXTURES / "tool_success", ep)
    for i in range(markers):
        (ep / "markers" / f"m{i:05d}").write_text(f"token-{i}")
    (ep / "markers" / "m00007-link").symlink_to("/etc/passwd")
    return ep


def _state(c: Collection) -> tuple[int, int, list[Finding], int]:
    return c.files, c.copied, c.findings, c.findings_dropped


@pytest.fixture
def forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pids of the copying children started while the test runs."""
    started: list[int] = []
    real = audit_copy._fork_copy

    def spy(*args: Any) -> tuple[int, int]:
        pid, fd = real(*args)
        started.append(pid)
        return pid, fd

    monkeypatch.setattr(audit_copy, "_fork_copy", spy)
    return started


def _slow_markers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The child's copy of the markers takes a minute: long enough to be interrupted."""
    real = Collection.copy_tree

    def slow(self: Collection, src: Path, dest: Path, where: str, counted: bool = True) -> None:
        if where == "markers":
            time.sleep(60)
        real(self, src, dest, where, counted)

    monkeypatch.setattr(Collection, "copy_tree", slow)


def _in_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(audit_copy, "CHILD_FROM", 10**9)


@pytest.mark.parametrize(
    "limits",
    [
        CollectLimits(),
        CollectLimits(max_files=300),  # the file cap is reached in the child, among the markers
        CollectLimits(max_bytes=5000),  # the byte cap too, and the witness is not copied at all
    ],
    ids=["whole", "file-cap", "byte-cap"],
)
def test_the_child_s_copy_is_the_sequential_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forks: list[int], limits: CollectLimits
) -> None:
    ep = _episode(tmp_path)
    (ep / "rollout.json").write_bytes((ep / "rollout.json").read_bytes() + b" " * 64)
    monkeypatch.setattr(audit_copy, "MAX_FILE_BYTES", (ep / "rollout.json").stat().st_size - 1)
    child = copy_evidence(ep, tmp_path / "child", limits)
    assert len(forks) == 1
    _in_turn(monkeypatch)
    in_turn = copy_evidence(ep, tmp_path / "in-turn", limits)
    assert len(forks) == 1
    assert _state(child) == _state(in_turn)
    # The markers' findings (the link, a cap) before the rollout's, which was copied first: as a copy in turn notes.
    kinds = [f.kind for f in child.findings]
    assert kinds[-1] == "over_cap_file" and child.findings[-1].path == "rollout.json"
    assert "symlink" in kinds or "file_cap" in kinds or "over_cap_file" in kinds[:-1]
    listing = sorted(p.relative_to(tmp_path / "child") for p in (tmp_path / "child").rglob("*"))
    assert listing == sorted(p.relative_to(tmp_path / "in-turn") for p in (tmp_path / "in-turn").rglob("*"))
    for name in listing:
        if (tmp_path / "in-turn" / name).is_file():
            assert (tmp_path / "child" / name).read_bytes() == (tmp_path / "in-turn" / name).read_bytes(), name


def test_an_audit_with_the_child_gives_the_sequential_audit_s_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    _episode(tmp_path)
    child = audit(tmp_path / "saved", tmp_path / "out-child")
    assert len(forks) == 1
    _in_turn(monkeypatch)
    in_turn = audit(tmp_path / "saved", tmp_path / "out-in-turn")
    assert len(forks) == 1
    strip = ("started_at", "finished_at", "seconds")

    def plain(r: dict[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in r.items() if k not in strip}
        out["collection"] = {k: v for k, v in r["collection"].items() if k not in strip}
        return out

    assert plain(child.results[0]) == plain(in_turn.results[0])
    assert list(child.results[0]) == list(in_turn.results[0])  # the keys in the same order: the files are equal
    assert child.results[0]["collection"]["files"] > MANY  # the markers the child copied are counted
    assert child.results[0]["verdict"] == "pass"


def test_few_markers_start_no_child(tmp_path: Path, forks: list[int]) -> None:
    ep = _episode(tmp_path, markers=audit_copy.CHILD_FROM - 10)
    copy_evidence(ep, tmp_path / "out", CollectLimits())
    assert forks == []


def test_the_audit_s_own_finding_comes_after_the_copy_s(tmp_path: Path, forks: list[int]) -> None:
    ep = _episode(tmp_path)
    with EvidenceCopy(ep, tmp_path / "out", CollectLimits()) as copying:
        copying.note(Finding("special", "scenario_result.json", "not used: it is not JSON"))
        found = copying.wait()
    assert [f.path for f in found.findings] == ["markers/m00007-link", "scenario_result.json"]
    assert copying.wait() is found  # once whole, the same collection at once
    assert len(forks) == 1


def test_a_failing_child_is_the_episode_s_error_not_a_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    _episode(tmp_path)
    real = Collection.copy_tree

    def broken(self: Collection, src: Path, dest: Path, where: str, counted: bool = True) -> None:
        if where == "markers":
            raise OSError("the disk went away")  # in the child only: the parent copies everything else
        real(self, src, dest, where, counted)

    monkeypatch.setattr(Collection, "copy_tree", broken)
    res = audit(tmp_path / "saved", tmp_path / "out")
    result = res.results[0]
    assert result["verdict"] == "error" and res.exit_code == 2
    assert result["execution"]["error"] == (
        "audit failed: CopyFailed: the copy of the markers failed: OSError: the disk went away"
    )
    trace = (tmp_path / "out" / "reference" / "tool_success" / "audit-error.txt").read_text()
    assert "in the child that copied them" in trace and 'raise OSError("the disk went away")' in trace
    assert len(forks) == 1
    with pytest.raises(ChildProcessError):
        os.waitpid(forks[0], os.WNOHANG)  # reaped


def test_a_killed_child_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forks: list[int]) -> None:
    ep = _episode(tmp_path)
    _slow_markers(monkeypatch)  # still copying when killed: not a child that had already reported
    with (
        pytest.raises(CopyFailed, match="ended with status -9"),
        EvidenceCopy(ep, tmp_path / "out", CollectLimits()) as c,
    ):
        os.kill(forks[0], 9)
        c.wait()


def test_an_interrupt_kills_the_child_and_reaps_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    ep = _episode(tmp_path)
    _slow_markers(monkeypatch)
    t = time.monotonic()
    with pytest.raises(KeyboardInterrupt), EvidenceCopy(ep, tmp_path / "out", CollectLimits()):
        raise KeyboardInterrupt
    assert time.monotonic() - t < 30
    with pytest.raises(ChildProcessError):
        os.waitpid(forks[0], os.WNOHANG)
    assert not (tmp_path / "out" / "markers").exists()  # the child never got to it


def test_an_interrupt_while_waiting_for_the_child_kills_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    ep = _episode(tmp_path)

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    _slow_markers(monkeypatch)
    old = signal.signal(signal.SIGALRM, interrupt)
    t = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt), EvidenceCopy(ep, tmp_path / "out", CollectLimits()) as copying:
            signal.setitimer(signal.ITIMER_REAL, 0.3)
            copying.wait()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert time.monotonic() - t < 30
    with pytest.raises(ChildProcessError):
        os.waitpid(forks[0], os.WNOHANG)
