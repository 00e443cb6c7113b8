"""Hostile harnesses against the pod and its limits, through real runs: nothing escapes, nothing hangs, nothing leaks.

The reference harness's `hostile-*` modes attack on purpose (images/reference/probe_reference/hostile_sandbox.py).
No test sends traffic anywhere but loopback: in the pod a connect to any other address has no route.
"""

from __future__ import annotations

import json
import os
import random
import secrets
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from orchestrator.evidence import load_json
from orchestrator.runtime import Engine
from orchestrator.runtime.spec import OWNER_LABEL, ContainerSpec, create_labels
from orchestrator.tempdirs import KINDS, OWNER_FILE
from tests.integration.conftest import HP, Images, hp, labelled, partial_summary
from tests.integration.test_isolation import host_addresses

pytestmark = pytest.mark.docker

EPISODE = ("reference", "tool_success")


def _episode(out: Path) -> Path:
    return out.joinpath(*EPISODE)


def _run_hostile(out: Path, mode: str, timeout: int, *extra: str) -> tuple[int, dict[str, object]]:
    res = hp("run", "-H", "reference", "-s", "tool_success", "-a", f"mode={mode}", "--timeout", str(timeout),
             *extra, "-o", str(out), timeout=600)  # fmt: skip
    assert res.code in (0, 1), f"exit {res.code}: a hostile harness is a finding, never an error\n{res.stderr[-3000:]}"
    assert (out / "summary.json").is_file(), "the run did not finish with a summary"
    result = load_json(_episode(out) / "scenario_result.json", "scenario-result/v1")
    assert result["verdict"] in ("pass", "fail"), result["execution"]
    run_id = load_json(out / "suite.json", "suite/v1")["run_id"]
    for kind in ("ps", "network", "volume"):
        assert labelled(kind, run_id) == [], f"docker {kind} still shows objects of run {run_id}"
    return res.code, result


def _witness(out: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (_episode(out) / "witness.jsonl").read_text().splitlines()]


def test_escape_attempts_fail_and_the_task_still_runs(engine: Engine, images: Images, tmp_path: Path) -> None:
    targets = host_addresses(engine)
    code, result = _run_hostile(tmp_path / "out", "hostile-network", 180, "-a", f"targets={','.join(targets)}")
    report = json.loads((_episode(tmp_path / "out") / "native" / ".probe-reference" / "hostile.json").read_text())
    assert report["interfaces"] == ["lo"]
    assert {c["target"].rsplit(":", 1)[0] for c in report["connects"]} == set(targets)
    for c in report["connects"]:
        assert c["result"] == "OSError:101", c  # ENETUNREACH: no route, nothing left the pod
        assert c["seconds"] < 1.0, c
    # The proxy's only listener besides 8080/53 is the streaming responder; without a live token it says nothing.
    assert len(report["foreign_requests"]) == 1, report["listening"]
    assert list(report["foreign_requests"].values()) == [""]
    assert report["lookup"] == {"metadata.google.internal": "gaierror"}
    events = _witness(tmp_path / "out")
    assert ("egress", "metadata.google.internal") in {(e["event"], e.get("target")) for e in events}
    assert events[-1]["event"] == "end"
    # The escape attempts are not the task's business: the honest rest of the run passes its P0 gate.
    assert result["verdict"] == "pass" and code == 0
    failed = {c["id"] for c in result["checks"] if c["status"] == "fail"}
    assert failed == {"egress.none"}


def test_a_version_that_never_ends_is_given_up_and_the_run_goes_on(images: Images, tmp_path: Path) -> None:
    t0 = time.monotonic()
    _code, result = _run_hostile(tmp_path / "out", "hostile-version", 20)
    runtime = load_json(_episode(tmp_path / "out") / "runtime.json", "runtime/v1")
    assert runtime["harness"]["version"] is None
    assert result["execution"]["status"] in ("exited", "timeout")
    assert time.monotonic() - t0 < 240


def _host_stalls(stop: threading.Event, worst: list[float]) -> None:
    while not stop.is_set():
        t0 = time.monotonic()
        time.sleep(0.05)
        worst[0] = max(worst[0], time.monotonic() - t0 - 0.05)


@pytest.mark.parametrize("mode", ["hostile-cpu", "hostile-fork"])
def test_cpu_burner_and_fork_bomb_end_as_a_timeout_within_their_limits(
    mode: str, images: Images, tmp_path: Path
) -> None:
    stop, worst = threading.Event(), [0.0]
    watcher = threading.Thread(target=_host_stalls, args=(stop, worst))
    watcher.start()
    try:
        code, result = _run_hostile(tmp_path / "out", mode, 15)
    finally:
        stop.set()
        watcher.join()
    assert code == 1
    assert result["execution"]["status"] == "timeout"
    assert result["verdict"] == "fail"
    assert "witness.final_answer_sent" in {c["id"] for c in result["checks"] if c["status"] == "fail"}
    limits = load_json(_episode(tmp_path / "out") / "runtime.json", "runtime/v1")["limits"]["harness"]
    assert limits["cpus"] == 1.0 and limits["pids"] == 512
    assert limits["memory_swap_bytes"] == limits["memory_bytes"]
    assert _witness(tmp_path / "out")[-1]["event"] == "end", "the proxy did not stop cleanly beside the harness"
    # A loaded shared machine stalls a little; a host starved by the harness would stall for seconds.
    assert worst[0] < 2.0, f"the host stalled {worst[0]:.2f}s while the harness ran"


# -- interrupts ------------------------------------------------------------------------------------

# Log lines that mark each moment of a run (stderr, human format).
MOMENTS = {
    "image-check": "image up to date",
    "version-probe": "asking the version",
    "pod-start": "] episode ",
    "harness-run": "harness started",
    "collection": "collecting",
}


class _Run:
    """`harness-probe run` in the background, its stderr read line by line."""

    def __init__(self, out: Path) -> None:
        self.out = out
        # A fresh version cache: every run asks the versions, so the version-probe moment happens.
        env = {**os.environ, "HARNESS_PROBE_VERSION_CACHE": str(out.with_name(f"{out.name}-versions"))}
        self.proc = subprocess.Popen(
            [HP, "run", "-H", "reference", "-s", "tool_success", "--timeout", "60", "-o", str(out)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._seen = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            with self._seen:
                self.lines.append(line)
                self._seen.notify_all()
        with self._seen:
            self.lines.append("<eof>")
            self._seen.notify_all()

    def wait_for(self, needle: str, timeout: float = 240) -> None:
        deadline = time.monotonic() + timeout
        with self._seen:
            while not any(needle in line for line in self.lines):
                assert "<eof>" not in self.lines, f"run ended before {needle!r}:\n{''.join(self.lines)[-3000:]}"
                assert self._seen.wait(deadline - time.monotonic()), f"no {needle!r} within {timeout}s"

    def signal(self, signum: int) -> int:
        self.proc.send_signal(signum)
        code = self.proc.wait(timeout=120)
        self._reader.join(timeout=30)
        assert self.proc.stderr is not None
        self.proc.stderr.close()
        return code


def _objects_of(engine: Engine, pid: int) -> list[str]:
    """Every container and volume whose owner label names process `pid` of this machine."""
    api = engine.client.api
    flt = {"label": OWNER_LABEL}
    found = [
        f"container {c['Names'][0].lstrip('/')}"
        for c in api.containers(all=True, filters=flt)
        if c["Labels"][OWNER_LABEL].split("/")[-2] == str(pid)
    ]
    found += [
        f"volume {v['Name']}"
        for v in api.volumes(filters=flt).get("Volumes") or []
        if v["Labels"][OWNER_LABEL].split("/")[-2] == str(pid)
    ]
    return found


def _tempdirs_of(pid: int) -> list[str]:
    """Every host temporary folder of ours whose owner file names process `pid` of this machine."""
    found = []
    for d in Path(tempfile.gettempdir()).iterdir():
        owner = d / OWNER_FILE
        mine = d.name.startswith(KINDS) and not d.is_symlink() and owner.is_file()
        if mine and owner.read_text().split("/")[-2] == str(pid):
            found.append(str(d))
    return found


# Each moment gets an INT or a TERM or both (the machine's CPU bounds how many real runs a test may start).
# Every moment with both signals; then a few at seeded random delays past the harness's start, where the pod's
# objects are being created, used and removed.
INTERRUPTS = [(moment, sig) for moment in MOMENTS for sig in (signal.SIGINT, signal.SIGTERM)]
RANDOM_DELAYS = [round(random.Random(seed).uniform(0.0, 2.5), 2) for seed in range(4)]


@pytest.mark.parametrize(("moment", "signum"), INTERRUPTS, ids=[f"{m}-{signal.Signals(s).name}" for m, s in INTERRUPTS])
def test_an_interrupt_at_any_moment_leaves_nothing(
    moment: str, signum: int, engine: Engine, images: Images, tmp_path: Path
) -> None:
    run = _Run(tmp_path / "out")
    run.wait_for(MOMENTS[moment])
    code = run.signal(signum)
    assert code == 130, "".join(run.lines)[-3000:]
    # Stopped once its episode had begun, the run leaves a partial summary marked interrupted; before, none.
    summary = partial_summary(tmp_path / "out")
    if moment == "image-check":
        assert summary is None
    if moment == "pod-start":
        # The episode's first log line comes as its pod is being set up: the stop lands either before the episode
        # counts as begun (never run) or after (interrupted); one or the other, never a fail or both.
        assert summary is not None and summary["counts"]["fail"] == 0, summary
        assert summary["counts"]["interrupted"] + len(summary["interrupted"]["not_run"]) == 1, summary
    if moment in ("harness-run", "collection"):
        assert summary is not None and summary["counts"]["interrupted"] == 1, summary
    assert _objects_of(engine, run.proc.pid) == []


@pytest.mark.parametrize("delay", RANDOM_DELAYS)
def test_an_interrupt_at_a_random_moment_leaves_nothing(
    delay: float, engine: Engine, images: Images, tmp_path: Path
) -> None:
    run = _Run(tmp_path / "out")
    run.wait_for(MOMENTS["harness-run"])
    time.sleep(delay)
    code = run.signal(signal.SIGINT if RANDOM_DELAYS.index(delay) % 2 == 0 else signal.SIGTERM)
    # Interrupted while running, or the run had already ended on its own (then with its own exit code).
    assert code in (0, 1, 130), "".join(run.lines)[-3000:]
    assert code != 130 or partial_summary(tmp_path / "out") is not None
    assert _objects_of(engine, run.proc.pid) == []


@pytest.mark.parametrize("moment", ["pod-start", "harness-run", "collection"])
def test_a_killed_run_is_swept_by_the_next(moment: str, engine: Engine, images: Images, tmp_path: Path) -> None:
    run = _Run(tmp_path / "killed")
    run.wait_for(MOMENTS[moment])
    deadline = time.monotonic() + 120
    while not _objects_of(engine, run.proc.pid) and time.monotonic() < deadline:
        time.sleep(0.2)  # the pod's first objects appear just after its log line
    run.signal(signal.SIGKILL)
    left = _objects_of(engine, run.proc.pid)
    assert left, "SIGKILL left nothing to sweep (the run was killed too early or too late)"
    # The episode's normalizer is started as the harness is: by collection its folder is surely there.
    folders = _tempdirs_of(run.proc.pid)
    assert folders or moment != "collection", "SIGKILL during collection left no normalizer folder to sweep"
    # The next run on this engine removes them first thing, and says what it removed; it is then interrupted.
    nxt = _Run(tmp_path / "next")
    nxt.wait_for("image up to date")
    assert nxt.signal(signal.SIGINT) == 130
    log = "".join(nxt.lines)
    assert "removed what runs that no longer exist left behind" in log
    for obj in left:
        assert obj.split(" ", 1)[1] in log
    assert _objects_of(engine, run.proc.pid) == []
    assert [f for f in folders if Path(f).exists()] == [] and _tempdirs_of(run.proc.pid) == []
    assert not (tmp_path / "killed" / "summary.json").exists()


def test_a_container_that_never_stops_printing_is_not_waited_on_past_the_readiness_deadline(
    engine: Engine, images: Images
) -> None:
    # Every read of the followed log stream gets bytes before its socket timeout, so only a deadline checked per
    # frame ends the wait.
    spec = ContainerSpec(
        image=images.base.tag,
        name=f"hp-chatty-{secrets.token_hex(4)}",
        entrypoint=["/bin/sh", "-c"],
        command=["while :; do echo chatter; sleep 0.01; done"],
        labels=create_labels(f"chatty-{secrets.token_hex(4)}"),
    )
    with engine.container(spec) as rc:
        rc.start()
        t0 = time.monotonic()
        with pytest.raises(TimeoutError, match="did not print"):
            rc.wait_for_log(b"listening", timeout=3)
        assert time.monotonic() - t0 < 15
