"""A one-node Slurm cluster on this machine for the tests: its own munge key and daemon, slurmctld and slurmd.

Everything lives in one folder (key, sockets, state, spool, logs, slurm.conf) and listens on ports of its own, so a
cluster already installed here is neither used nor disturbed; `stop()` ends exactly the daemons it started.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

TOOLS = ("munged", "munge", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "sinfo")
NODE = "hpnode"

# Chosen for a root, cgroup v1 machine without systemd: processes tracked by parentage (no cgroup plugin), no task
# binding, no accounting daemon (the controller keeps finished jobs for MinJobAge, which `scontrol show job`
# reads), CPUs as the only consumable so array tasks share the node.
CONF = """\
ClusterName=hprobe
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={dir}/munge.sock
StateSaveLocation={dir}/state
SlurmdSpoolDir={dir}/spool
SlurmctldPidFile={dir}/slurmctld.pid
SlurmdPidFile={dir}/slurmd.pid
SlurmctldLogFile={dir}/log/slurmctld.log
SlurmdLogFile={dir}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
MinJobAge=3600
KillWait=60
NodeName={node} NodeHostname={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName=probe Nodes={node} Default=YES MaxTime=INFINITE State=UP
"""


def slurm_missing() -> str | None:
    """Why a Slurm cluster cannot be started here, or None."""
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        return f"{', '.join(missing)} not installed (.ci/run installs Debian's slurm-wlm and munge)"
    if os.geteuid() != 0:
        return "a one-node cluster runs slurmd as root"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    """Start with `start()`, stop with `stop()` (in a finally); `env` is what Slurm's commands need to find it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.conf = root / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self._procs: list[subprocess.Popen[bytes]] = []
        self._log: IO[bytes] | None = None

    def start(self, timeout: float = 60) -> None:
        root = self.root
        # munged wants its socket's folder searchable by all and its key readable by its owner only.
        root.mkdir(parents=True, exist_ok=True)
        root.chmod(0o755)
        for sub in ("state", "spool", "log"):
            (root / sub).mkdir(exist_ok=True)
        key = root / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        host = socket.gethostname().split(".")[0]
        self.conf.write_text(
            CONF.format(
                host=host, dir=root, node=NODE, cpus=os.cpu_count() or 1, ctld_port=_free_port(), d_port=_free_port()
            )
        )
        self._log = log = (root / "log" / "daemons.out").open("ab")
        munge = ["munged", "-F", f"--socket={root}/munge.sock", f"--key-file={key}", f"--log-file={root}/munged.log",
                 f"--pid-file={root}/munged.pid", f"--seed-file={root}/munged.seed"]  # fmt: skip
        self._spawn(munge, log)
        self._wait(lambda: (root / "munge.sock").exists(), timeout, "munged made no socket")
        self._spawn(["slurmctld", "-D", "-f", str(self.conf)], log)
        self._spawn(["slurmd", "-D", "-N", NODE, "-f", str(self.conf)], log)
        self._wait(lambda: self.node_state() == "idle", timeout, "the node never became idle")

    def _spawn(self, cmd: list[str], log: IO[bytes]) -> None:
        self._procs.append(subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=self.env))

    def _wait(self, ready: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ready():
                return
            if any(p.poll() is not None for p in self._procs):
                break
            time.sleep(0.3)
        raise RuntimeError(f"slurm cluster: {what}; logs: {self.logs()}")

    def run(self, *cmd: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False, env=self.env)

    def node_state(self) -> str:
        res = self.run("sinfo", "-h", "-N", "-o", "%T")
        return res.stdout.strip() if res.returncode == 0 else ""

    def queue(self) -> list[str]:
        """Every job the controller still has pending or running, as `id state`."""
        res = self.run("squeue", "-h", "-o", "%i %T")
        assert res.returncode == 0, res.stderr  # a controller that does not answer is not an empty queue
        return [ln for ln in res.stdout.splitlines() if ln.strip()]

    def job(self, job_id: str) -> dict[str, str] | None:
        """`scontrol show job` as KEY -> VALUE (an array task's or a plain job's record); None when the controller
        has none (an array task cancelled while pending is dropped)."""
        res = self.run("scontrol", "-o", "show", "job", job_id)
        if res.returncode != 0:
            if "not found" in res.stdout + res.stderr or "Invalid job id" in res.stdout + res.stderr:
                return None
            raise RuntimeError(f"scontrol show job {job_id}: {res.stderr.strip()}")
        fields = res.stdout.splitlines()[0].split()
        return dict(f.split("=", 1) for f in fields if "=" in f)

    def logs(self) -> str:
        parts = []
        for p in [*sorted((self.root / "log").glob("*")), self.root / "munged.log"]:
            if p.is_file():
                parts.append(f"--- {p.name}\n" + "\n".join(p.read_text(errors="replace").splitlines()[-15:]))
        return "\n".join(parts)

    def stop(self) -> None:
        """End the daemons this cluster started (slurmd first, so it stops no job the test still counts on)."""
        for proc in reversed(self._procs):
            if proc.poll() is None:
                proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        self._procs.clear()
        if self._log:
            self._log.close()
