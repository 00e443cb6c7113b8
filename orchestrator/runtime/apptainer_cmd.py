"""The commands the Apptainer backend runs, as pure functions: SIF builds, the pod's namespace holder, and the
two `apptainer exec` lines that join it.

Apptainer has no daemon and no network of its own to give: the pod is one user + network namespace made with
`unshare` before Apptainer starts (loopback only, brought up by the holder), and both processes enter it with
`nsenter`. Each runs in its own container (`--containall`: own PID, IPC and mount namespaces, no host home or
/tmp), so the witness directory bound into the proxy is not visible from the harness; only the markers
directory is bound into both (read-only for the proxy).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "LOOPBACK_UP",
    "NO_MOUNT",
    "Bind",
    "ExecSpec",
    "build_sif_command",
    "env_file_text",
    "exec_command",
    "holder_command",
    "join_command",
    "sif_name",
]

# Run by the holder inside the new network namespace: bring `lo` up (a new namespace starts with it down), say
# so, then wait until the pod ends. Python's socket ioctls need no iproute2 on the cluster node.
LOOPBACK_UP = """
import fcntl, socket, struct, sys, time
s = socket.socket()
req = struct.pack("16sH14x", b"lo", 0)
flags = struct.unpack("16sH14x", fcntl.ioctl(s, 0x8913, req))[1]
fcntl.ioctl(s, 0x8914, struct.pack("16sH14x", b"lo", flags | 1))
print("pod-ready", flush=True)
while True:
    time.sleep(3600)
"""

# Apptainer's --no-mount values (its launcher's setNoMountFlags): every configured bind path, hostfs, cwd.
NO_MOUNT = "bind-paths,hostfs,cwd"
_TAG = re.compile(r"^harness-probe/(?P<name>[a-z0-9-]+):(?P<hash>[0-9a-f]{16})$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def sif_name(tag: str) -> str:
    """`harness-probe/proxy:0123456789abcdef` -> `proxy-0123456789abcdef.sif`: cached by the same content hash."""
    m = _TAG.match(tag)
    if not m:
        raise ValueError(f"not a content-hash tag: {tag!r}")
    return f"{m['name']}-{m['hash']}.sif"


def build_sif_command(apptainer: str, archive: Path, dest: Path) -> list[str]:
    """A SIF from a docker-archive (`images export`, or `docker save`/`podman save` on the same machine)."""
    return [apptainer, "build", "--force", str(dest), f"docker-archive://{archive}"]


def holder_command(python: str) -> list[str]:
    """The process that owns the pod's user + network namespace for its whole life (killed when the pod ends)."""
    return ["unshare", "--user", "--map-root-user", "--net", "--fork", "--kill-child", python, "-c", LOOPBACK_UP]


@dataclass(frozen=True)
class Bind:
    source: Path
    target: str
    read_only: bool = True

    def arg(self) -> str:
        for part in (str(self.source), self.target):
            # Apptainer splits --bind on ':' and ','; such a path would bind something else.
            if ":" in part or "," in part:
                raise ValueError(f"bind path may not contain ':' or ',': {part!r}")
        return f"{self.source}:{self.target}:{'ro' if self.read_only else 'rw'}"


@dataclass(frozen=True)
class ExecSpec:
    """One process of the pod, as Apptainer runs it."""

    sif: Path
    command: Sequence[str]
    binds: Sequence[Bind] = ()
    env_file: Path | None = None  # written by env_file_text(); values with any character survive it
    workdir: str | None = None
    writable_tmpfs: bool = True
    # `run` starts the image's entrypoint (Docker's ENTRYPOINT + the command as its arguments); `exec` runs the
    # command itself, for a spec that names its own entrypoint.
    use_entrypoint: bool = True
    # cgroup limits (--memory, --cpus, --pids-limit): only where cgroups v2 are delegated to the user, without
    # which Apptainer refuses to start (apptainer_guard.CGROUPS_ENV).
    memory: str | None = None
    cpus: float | None = None
    pids: int | None = None


def join_command(holder_pid: int) -> list[str]:
    """Enter the pod's user and network namespaces (the holder's child owns them); the rest of the line runs there."""
    return ["nsenter", f"--target={holder_pid}", "--user", "--net", "--preserve-credentials", "--"]


def env_file_text(environment: Mapping[str, str]) -> str:
    """The environment as an Apptainer env file (shell syntax, each value quoted): `--env KEY=VALUE` would split a
    value at its commas."""
    lines = []
    for key, value in sorted(environment.items()):
        if not _ENV_NAME.match(key):
            raise ValueError(f"not an environment variable name: {key!r}")
        if "\0" in value:
            raise ValueError(f"environment value of {key} contains a NUL byte")
        lines.append(f"{key}={shlex.quote(value)}")
    return "\n".join(lines) + "\n"


def exec_command(apptainer: str, holder_pid: int, spec: ExecSpec) -> list[str]:
    """`nsenter` into the holder's namespaces, then `apptainer exec` hardened: no host environment, home, /tmp
    or devices beyond the minimum; the image read-only with a small in-memory overlay for what it writes."""
    cmd = join_command(holder_pid)
    cmd += [
        apptainer,
        "run" if spec.use_entrypoint else "exec",
        "--containall",
        "--cleanenv",
        "--no-home",
        "--no-privs",
        # The administrator's `bind path` entries of apptainer.conf (a cluster binds the user's data there,
        # read-write), the host file systems and the working folder: none is mounted.
        "--no-mount",
        NO_MOUNT,
    ]
    if spec.memory is not None:
        cmd += ["--memory", spec.memory]
    if spec.cpus is not None:
        cmd += ["--cpus", f"{spec.cpus:g}"]
    if spec.pids is not None:
        cmd += ["--pids-limit", str(spec.pids)]
    if spec.writable_tmpfs:
        cmd.append("--writable-tmpfs")
    if spec.workdir:
        cmd += ["--pwd", spec.workdir]
    for bind in spec.binds:
        cmd += ["--bind", bind.arg()]
    if spec.env_file is not None:
        cmd += ["--env-file", str(spec.env_file)]
    cmd.append(str(spec.sif))
    cmd += list(spec.command)
    return cmd
