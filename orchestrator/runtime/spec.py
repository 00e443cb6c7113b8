"""What a container is started with, independent of the runtime: image, command, hardening and limits, labels."""

from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from orchestrator import __version__

__all__ = [
    "LABEL_NS",
    "OWNER_LABEL",
    "RUN_LABEL",
    "ContainerSpec",
    "Owner",
    "create_labels",
    "live_owner",
    "redact_host",
]

LABEL_NS = "harness-probe"
RUN_LABEL = f"{LABEL_NS}.run"
# Which process created an object: lets a later run tell a dead run's leftovers from a live run's objects.
OWNER_LABEL = f"{LABEL_NS}.owner"

# Container output kept by the engine: the newest 2 x 8 MiB (a harness printing forever cannot fill the disk).
LOG_MAX_SIZE = "8m"
LOG_MAX_FILES = 2


@dataclass(frozen=True)
class Owner:
    """A process on a machine: host (name + machine id), pid, and the pid's start time (pid reuse is not a match)."""

    host: str
    pid: int
    started: str

    def label(self) -> str:
        return f"{self.host}/{self.pid}/{self.started}"

    @classmethod
    def parse(cls, value: str) -> Owner | None:
        host, _, rest = value.rpartition("/")
        host, _, pid = host.rpartition("/")
        if not host or not pid.isdigit():
            return None
        return cls(host, int(pid), rest)

    @classmethod
    def this_process(cls) -> Owner:
        return cls(_host_id(), os.getpid(), _start_time(os.getpid()) or "")

    def is_dead(self, here: Owner) -> bool:
        """True only when sure: same machine, and the pid is gone or is now another process."""
        if self.host != here.host:
            return False
        started = _start_time(self.pid)
        if started is None:
            return not _pid_exists(self.pid)
        return bool(self.started) and started != self.started


def live_owner(labels: dict[str, str] | None, here: Owner) -> str | None:
    """The owner label of an object whose run may still be alive (not sure it is dead), else None.

    The automatic sweep removes only what is surely dead; `cleanup` without --force spares what this says may live.
    An object without an owner label has no process to ask about, so it is not spared."""
    value = (labels or {}).get(OWNER_LABEL, "")
    owner = Owner.parse(value)
    return value if owner is not None and not owner.is_dead(here) else None


def _host_id() -> str:
    # The PID namespace is part of "the machine": a pid from another namespace (a container sharing the engine, a
    # CI job beside another) names another process, so only an owner in ours can be judged dead by its pid.
    name = f"{socket.gethostname()}{_pid_namespace()}"
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            mid = Path(path).read_text().strip()
        except OSError:
            continue
        if mid:
            return f"{name}-{mid[:12]}"
    return name


def _pid_namespace() -> str:
    """`@pidns<inode>` of this process's PID namespace (Linux), else nothing."""
    try:
        link = os.readlink("/proc/self/ns/pid")  # `pid:[4026531836]`
    except OSError:
        return ""
    digits = "".join(c for c in link if c.isdigit())
    return f"@pidns{digits}" if digits else ""


def _start_time(pid: int) -> str | None:
    """Linux: the process start time in clock ticks since boot; None where /proc cannot say."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parentheses; fields after the last ')' are fixed.
    fields = stat.rsplit(")", 1)[1].split()
    return fields[19] if len(fields) > 19 else None


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_OWNER = Owner.this_process()


def create_labels(run_id: str, **extra: str) -> dict[str, str]:
    """Every object we create carries these, so `harness-probe cleanup`, the sweep and tests can find leftovers."""
    for key in extra:
        if key.startswith(LABEL_NS):
            raise ValueError(f"label {key!r} uses the reserved namespace {LABEL_NS!r}")
    labels = {RUN_LABEL: run_id, f"{LABEL_NS}.version": __version__, OWNER_LABEL: _OWNER.label()}
    labels.update({f"{LABEL_NS}.{k}": v for k, v in extra.items()})
    return labels


@dataclass
class ContainerSpec:
    """What to start; the harness and proxy presets fill one each. Defaults are the hardened ones."""

    image: str
    name: str
    command: list[str] | None = None
    entrypoint: list[str] | None = None
    environment: dict[str, str] = field(default_factory=dict)
    user: str | None = None
    working_dir: str | None = None
    # "none" (only loopback) or "container:<id>" (join a pod); None is the engine's default network.
    network: str | None = "none"
    volumes: dict[str, dict[str, str]] = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)  # absolute path below files_base -> content
    files_base: str = "/"
    files_owner: tuple[int, int] = (0, 0)
    labels: dict[str, str] = field(default_factory=dict)
    mem_limit: str = "2g"
    cpus: float = 1.0
    pids_limit: int = 512
    cap_drop_all: bool = True
    read_only: bool = False
    tmpfs: dict[str, str] = field(default_factory=dict)  # path -> size ("64m"), for a read-only root
    tmpfs_owner: tuple[int, int] = (1000, 1000)  # the user `probe` of every image (images/base)
    dns: list[str] | None = None
    extra_hosts: dict[str, str] = field(default_factory=dict)
    sysctls: dict[str, str] = field(default_factory=dict)

    def limits(self) -> dict[str, Any]:
        """The limits as asked for; the engine's inspect gives the effective ones (see the backends)."""
        return {
            "cpus": self.cpus,
            "memory": self.mem_limit,
            "memory_swap": self.mem_limit,
            "pids": self.pids_limit,
            "cap_drop_all": self.cap_drop_all,
            "no_new_privileges": True,
            "read_only_rootfs": self.read_only,
            "tmpfs": dict(self.tmpfs),
            "log_max_bytes": f"{LOG_MAX_FILES} x {LOG_MAX_SIZE}",
            "network": self.network,
        }


_USERINFO = re.compile(r"^[^@/]*@")


def redact_host(value: str | None) -> str | None:
    """DOCKER_HOST as safe to publish: user names, passwords and query strings (tokens) removed."""
    if value is None:
        return None
    try:
        parts = urlsplit(value)
    except ValueError:
        return "<unparseable>"
    if not parts.scheme:
        return _USERINFO.sub("", value)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return f"{parts.scheme}://{host}{parts.path}"
