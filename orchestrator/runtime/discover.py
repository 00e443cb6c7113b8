"""Which container runtimes this machine has, which of them answer, and why one does not.

`doctor` prints this; `--runtime` with no value takes the first runtime that answers, in ORDER. Every probe is
bounded in time and never starts a container: it asks the runtime about itself only.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.runtime.ping import UNIX_SCHEMES, api_answers
from orchestrator.runtime.spec import redact_host

__all__ = [
    "ORDER",
    "RuntimeStatus",
    "candidate_docker_sockets",
    "discover",
    "first_answering",
]

# Docker first (what most users have and what the tests cover most), then Podman (often the only engine allowed
# on a workstation), then Apptainer (clusters without a daemon).
ORDER = ("docker", "podman", "apptainer")
PROBE_SECONDS = 10.0

Runner = Callable[[Sequence[str], float], "subprocess.CompletedProcess[str]"]


@dataclass
class RuntimeStatus:
    """One runtime as `doctor` reports it."""

    name: str
    binary: str | None
    answers: bool
    version: str | None = None
    rootless: bool | None = None
    endpoint: str | None = None
    reasons: list[str] = field(default_factory=list)  # why it does not answer, or what it cannot do
    notes: list[str] = field(default_factory=list)  # facts worth knowing that do not stop it

    def as_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "binary": self.binary,
            "answers": self.answers,
            "version": self.version,
            "rootless": self.rootless,
            "endpoint": self.endpoint,
            "reasons": self.reasons,
            "notes": self.notes,
        }


def _run(cmd: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout, check=False)


def candidate_docker_sockets(env: dict[str, str] | None = None, home: Path | None = None) -> list[str]:
    """Docker API endpoints worth trying, most specific first: DOCKER_HOST, the root socket, rootless Docker,
    Lima's VMs (`~/.lima/<vm>/sock/docker.sock`) and Colima."""
    env = {} if env is None else dict(env)  # the CLI passes what it read; nothing here reads os.environ
    home = Path(env.get("HOME", str(Path.home()))) if home is None else home
    found: list[str] = []
    if env.get("DOCKER_HOST"):
        found.append(env["DOCKER_HOST"])
    sockets = ["/var/run/docker.sock"]
    if env.get("XDG_RUNTIME_DIR"):
        sockets.append(f"{env['XDG_RUNTIME_DIR']}/docker.sock")
    sockets += sorted(glob.glob(str(home / ".lima" / "*" / "sock" / "docker.sock")))
    sockets.append(str(home / ".colima" / "default" / "docker.sock"))
    for sock in sockets:
        url = f"unix://{sock}"
        if url not in found and Path(sock).is_socket():
            found.append(url)
    return found


def _lima_vm(endpoint: str | None) -> str | None:
    if endpoint and "/.lima/" in endpoint:
        return endpoint.split("/.lima/", 1)[1].split("/", 1)[0]
    return None


def probe_docker(run: Runner = _run, env: dict[str, str] | None = None) -> RuntimeStatus:
    import docker  # the SDK is a dependency; imported here so `doctor --json` stays fast when it is not needed

    status = RuntimeStatus("docker", shutil.which("docker") or shutil.which("dockerd"), answers=False)
    # DOCKER_HOST set names the one engine the docker SDK (and `run`) will use: no other socket speaks for it.
    named = (env or {}).get("DOCKER_HOST")
    endpoints = [named] if named else candidate_docker_sockets(env)
    if not endpoints:
        status.reasons.append("no Docker socket found (DOCKER_HOST unset, /var/run/docker.sock absent)")
        return status
    for endpoint in endpoints:
        client: docker.DockerClient | None = None
        if endpoint.startswith(UNIX_SCHEMES) and not api_answers(endpoint, PROBE_SECONDS):
            status.reasons.append(f"{redact_host(endpoint)}: nothing answers a ping on this socket")
            continue
        try:
            # Making the client already asks the engine its API version.
            client = docker.DockerClient(base_url=endpoint, timeout=int(PROBE_SECONDS))
            info = client.info()
            version = client.version()
        except Exception as exc:  # any failure to talk is a reason, never a crash of doctor
            status.reasons.append(f"{redact_host(endpoint)}: {type(exc).__name__}: {str(exc)[:160]}")
            continue
        finally:
            if client is not None:
                client.close()
        status.answers = True
        status.endpoint = redact_host(endpoint)
        status.version = str(version.get("Version"))
        product = " ".join(str(c.get("Name", "")) for c in version.get("Components", []))
        if "Podman" in product:
            status.notes.append("this socket is served by Podman's Docker-compatible API")
        options = [str(o) for o in info.get("SecurityOptions", [])]
        status.rootless = bool(info.get("Rootless")) or any("rootless" in o for o in options)
        if info.get("CgroupVersion") == "1" and status.rootless:
            status.reasons.append("rootless on a cgroup v1 host: memory, CPU and pids limits cannot be applied")
        vm = _lima_vm(endpoint)
        if vm:
            status.notes.append(f"Lima VM {vm!r}: containers run inside that VM")
        return status
    return status


def probe_podman(run: Runner = _run, env: dict[str, str] | None = None) -> RuntimeStatus:
    binary = shutil.which("podman")
    status = RuntimeStatus("podman", binary, answers=False)
    if not binary:
        status.reasons.append("podman is not installed (Debian/Ubuntu: apt-get install podman)")
        return status
    try:
        # CONTAINER_HOST (what harness-probe then uses too) names the service to ask, e.g. a rootless user's.
        named = (env or {}).get("CONTAINER_HOST")
        remote = ["--remote", "--url", named] if named else []
        proc = run([binary, *remote, "info", "--format", "json"], PROBE_SECONDS)
    except subprocess.TimeoutExpired:
        status.reasons.append(f"`podman info` did not answer within {PROBE_SECONDS:.0f} s")
        return status
    if proc.returncode != 0:
        status.reasons.append(f"`podman info` failed: {proc.stderr.strip()[:200]}")
        return status
    try:
        info = json.loads(proc.stdout)
    except json.JSONDecodeError:
        status.reasons.append("`podman info` printed something that is not JSON")
        return status
    host = info.get("host", {}) if isinstance(info, dict) else {}
    status.answers = True
    status.version = str(info.get("version", {}).get("Version")) if isinstance(info.get("version"), dict) else None
    status.rootless = bool(host.get("security", {}).get("rootless"))
    status.endpoint = str(host.get("remoteSocket", {}).get("path") or "") or None
    if host.get("cgroupVersion") == "v1" and status.rootless:
        status.reasons.append("rootless on a cgroup v1 host: memory, CPU and pids limits cannot be applied")
    if not status.rootless and not _has_cap_sys_resource():
        status.notes.append("no CAP_SYS_RESOURCE: containers get explicit nofile/nproc ulimits")
    return status


def _has_cap_sys_resource() -> bool:
    """Podman as root raises nofile/nproc limits at start, which fails in VMs that took CAP_SYS_RESOURCE away."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("CapBnd:"):
                return bool(int(line.split()[1], 16) & (1 << 24))
    except (OSError, ValueError, IndexError):
        return False
    return False


def user_namespaces_reason() -> str | None:
    """Apptainer without setuid, and the pod without root, need unprivileged user namespaces."""
    try:
        if int(Path("/proc/sys/user/max_user_namespaces").read_text().strip() or "0") == 0:
            return "user namespaces are disabled (/proc/sys/user/max_user_namespaces is 0)"
    except (OSError, ValueError):
        return "user namespaces: /proc/sys/user/max_user_namespaces is unreadable"
    restrict = Path("/proc/sys/kernel/apparmor_restrict_unprivileged_userns")
    try:
        if os.geteuid() != 0 and restrict.read_text().strip() == "1":
            return "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1)"
    except OSError:
        pass
    return None


def probe_apptainer(run: Runner = _run, env: dict[str, str] | None = None) -> RuntimeStatus:
    binary = shutil.which("apptainer") or shutil.which("singularity")
    status = RuntimeStatus("apptainer", binary, answers=False)
    if not binary:
        status.reasons.append("apptainer is not installed (not packaged in Debian; see apptainer.org or its PPA)")
        return status
    try:
        proc = run([binary, "--version"], PROBE_SECONDS)
    except subprocess.TimeoutExpired:
        status.reasons.append(f"`{binary} --version` did not answer within {PROBE_SECONDS:.0f} s")
        return status
    if proc.returncode != 0:
        status.reasons.append(f"`{binary} --version` failed: {proc.stderr.strip()[:200]}")
        return status
    status.version = proc.stdout.strip()
    status.rootless = os.geteuid() != 0
    reason = user_namespaces_reason()
    if reason:
        status.reasons.append(reason)
        return status
    if shutil.which("unshare") is None:
        status.reasons.append("`unshare` (util-linux) is missing: the pod's network namespace needs it")
        return status
    status.answers = True
    return status


PROBES: dict[str, Callable[[Runner, dict[str, str] | None], RuntimeStatus]] = {
    "docker": probe_docker,
    "podman": probe_podman,
    "apptainer": probe_apptainer,
}


def discover(names: Sequence[str] = ORDER, env: dict[str, str] | None = None) -> list[RuntimeStatus]:
    """Each runtime's status; `env` holds the variables the CLI read (DOCKER_HOST, CONTAINER_HOST, HOME, ...)."""
    return [PROBES[name](_run, env) for name in names]


def first_answering(statuses: Sequence[RuntimeStatus]) -> RuntimeStatus | None:
    return next((s for s in statuses if s.answers), None)
