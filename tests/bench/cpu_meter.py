"""CPU seconds a harness-probe command spends, by who spends them: the containers of its run by role, the command
with every process it starts, and the engine's daemons. Unlike wall time, these do not grow with the machine's load.

Containers are measured from cgroup v1 `cpuacct` (Docker's cgroupfs layout), polled while they live, since each is
removed at its episode's end: a lower bound by at most one poll interval each. The command's descendants include
the normalizers' fork server, which outlives the command by a moment: this process becomes their subreaper and
reaps them, so their CPU is counted. Elsewhere (cgroup v2, Podman) the container figures are absent.
"""

from __future__ import annotations

import ctypes
import os
import resource
import subprocess
import threading
import time
from collections import Counter
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.runtime.spec import LABEL_NS, OWNER_LABEL

CGROUP = Path("/sys/fs/cgroup/cpuacct/docker")
ENGINE = ("dockerd", "containerd", "containerd-shim", "containerd-shim-runc-v2")
PR_SET_CHILD_SUBREAPER = 36
POLL_S = 0.1


@dataclass
class CpuSeconds:
    command: float = 0.0  # harness-probe and every process it started (normalizers, their server)
    engine: float = 0.0  # the engine's daemons while the command ran (other users of the engine included)
    containers: dict[str, float] = field(default_factory=dict)  # by role: proxy, harness, version

    def line(self, episodes: int) -> str:
        roles = ", ".join(f"{r} {s / episodes:.2f}" for r, s in sorted(self.containers.items())) or "n/a"
        total = self.command + self.engine + sum(self.containers.values())
        return (
            f"CPU s per episode: harness-probe {self.command / episodes:.2f}, containers ({roles}), "
            f"engine {self.engine / episodes:.2f}; total {total / episodes:.2f}"
        )


def _engine_seconds() -> float:
    total = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() in ENGINE:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            continue
    return total / os.sysconf("SC_CLK_TCK")


def _children() -> set[int]:
    """This process's children now: the ones started before the command (a Podman API service the bench's engine
    started, say) are not the command's, and are never waited for."""
    mine = str(os.getpid())
    found: set[int] = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1] == mine:
                found.add(int(pid))
        except (OSError, IndexError):
            continue
    return found


def _reap_orphans(keep: set[int], within: float = 15.0) -> None:
    """Reap the command's descendants that were handed to this subreaper, waiting up to `within` for them to end."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        orphans = _children() - keep
        if not orphans:
            return
        for pid in orphans:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                continue
        time.sleep(0.05)


def run_measured(argv: list[str], client: Any) -> tuple[subprocess.CompletedProcess[str], float, CpuSeconds]:
    """Run `argv` to its end: its result, its wall seconds (start to exit) and its CPU seconds.

    `client` is a docker SDK client for the containers' roles (None: no container figures). The wall ends when the
    command exits, not when its output pipes close or its orphans are reaped.
    """
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    keep = _children()
    usage: dict[str, float] = {}
    roles: dict[str, str] = {}
    done = threading.Event()
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    owner = f"/{proc.pid}/"
    exited: list[float] = []

    def watch_exit() -> None:
        # Seen without reaping it (WNOWAIT): communicate() below still collects the exit status.
        with suppress(ChildProcessError):  # communicate() reaped it first: it has just exited
            os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
        exited.append(time.perf_counter())

    def poll_usage() -> None:
        while not done.is_set():
            for cid in os.listdir(CGROUP) if CGROUP.is_dir() else []:
                try:
                    usage[cid] = max(usage.get(cid, 0.0), int((CGROUP / cid / "cpuacct.usage").read_text()) / 1e9)
                except (OSError, ValueError):
                    continue
            time.sleep(POLL_S)

    def poll_roles() -> None:
        while client is not None and not done.is_set():
            try:
                for c in client.api.containers(all=True, filters={"label": OWNER_LABEL}):
                    labels = c.get("Labels") or {}
                    if owner in labels.get(OWNER_LABEL, ""):
                        roles[c["Id"]] = labels.get(f"{LABEL_NS}.role", "other")
            except Exception:  # the engine is busy: the next poll gets it
                pass
            time.sleep(0.5)

    threads = [
        threading.Thread(target=poll_usage, daemon=True),
        threading.Thread(target=poll_roles, daemon=True),
        threading.Thread(target=watch_exit, daemon=True),
    ]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    engine0 = _engine_seconds()
    for t in threads:
        t.start()
    out, err = proc.communicate()
    done.set()
    for t in threads:
        t.join()
    engine = _engine_seconds() - engine0
    _reap_orphans(keep)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    command = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    by_role: Counter[str] = Counter()
    for cid, role in roles.items():
        by_role[role] += usage.get(cid, 0.0)
    result = subprocess.CompletedProcess(argv, proc.returncode, out, err)
    return result, exited[0] - t0, CpuSeconds(command, engine, dict(by_role) if usage else {})
