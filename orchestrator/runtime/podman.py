"""Podman through its Docker-compatible API: the Docker backend with what Podman needs said differently.

Measured on Podman 4.3 (Debian bookworm), rootful and rootless:
- `--dns`/`--add-host` are refused with `--network none`, and a container joining another's namespace gets its
  own generated /etc/hosts and an empty resolv.conf: both containers get the pod's two files bind-mounted.
- As root in a VM without CAP_SYS_RESOURCE, every start fails raising nofile/nproc ("error setting rlimit"):
  containers get explicit limits no higher than the engine's own.
- A tmpfs volume with `size=` is refused (read as a project-quota option), and tmpfs mounts take no uid/gid:
  volumes are in-memory without their own cap (the container's memory limit bounds them where cgroups apply),
  mounts are world-writable with the sticky bit. `limits()` in runtime.json says so.
- Rootless on a cgroup v1 host drops memory, CPU and pids limits (with a warning): recorded from inspect.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import docker
import structlog

from orchestrator.runtime.archive import transfer_image
from orchestrator.runtime.docker import Engine, EngineUnavailable
from orchestrator.runtime.ping import api_answers
from orchestrator.runtime.pod import LOOPBACK, PROVIDER_HOST
from orchestrator.runtime.spec import ContainerSpec, redact_host

log = structlog.get_logger(__name__)

__all__ = ["PODMAN_ULIMITS", "PodmanEngine", "api_answers", "podman_socket"]

# nofile/nproc (soft, hard): at or below what Podman's own service gets here, so nothing needs raising.
PODMAN_ULIMITS = {"nofile": (4096, 4096), "nproc": (4096, 4096)}
SERVICE_IDLE_SECONDS = 300  # a service we start exits by itself once nothing has used it for this long


def podman_socket(container_host: str | None = None, xdg_runtime_dir: str | None = None) -> str:
    """CONTAINER_HOST (Podman's own variable), else the rootless user's socket, else the root socket."""
    if container_host:
        return container_host
    if os.geteuid() != 0:
        runtime_dir = xdg_runtime_dir or f"/run/user/{os.geteuid()}"
        return f"unix://{runtime_dir}/podman/podman.sock"
    return "unix:///run/podman/podman.sock"


def _start_service(url: str) -> None:
    """`podman system service` on `url`, detached; it ends itself after SERVICE_IDLE_SECONDS without a client."""
    podman = shutil.which("podman")
    if podman is None:
        raise EngineUnavailable("podman is not installed (Debian/Ubuntu: apt-get install podman)")
    path = url.removeprefix("unix://")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    log.info("starting podman's API service", socket=url, idle_exit_seconds=SERVICE_IDLE_SECONDS)
    subprocess.Popen(
        [podman, "system", "service", f"--time={SERVICE_IDLE_SECONDS}", url],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 30
    while not api_answers(url):
        if time.monotonic() > deadline:
            raise EngineUnavailable(f"podman's API service did not answer at {url} within 30 s")
        time.sleep(0.2)


def _pod_etc() -> Path:
    """The pod's hosts and resolv.conf, bind-mounted read-only into both containers (see the module doc). Their
    content never changes, so one directory per user serves every run and nothing is left per run; a directory of
    that name that is not ours (another user's, a link) is never used."""
    d = Path(tempfile.gettempdir()) / f"harness-probe-podman-etc-{os.getuid()}"
    try:
        d.mkdir(mode=0o755, exist_ok=True)
        st = d.lstat()
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            raise PermissionError(f"{d} is not a directory of ours")
    except OSError:
        d = Path(tempfile.mkdtemp(prefix="harness-probe-podman-etc-"))
        d.chmod(0o755)
    for name, text in (
        ("hosts", f"{LOOPBACK} localhost {PROVIDER_HOST}\n"),
        ("resolv.conf", f"nameserver {LOOPBACK}\n"),
    ):
        f = d / name
        if f.is_symlink() or not f.is_file() or f.read_text() != text:
            f.unlink(missing_ok=True)
            f.write_text(text)
        f.chmod(0o644)
    return d


class PodmanEngine(Engine):
    name = "podman"
    rooted_archive_names = True
    sized_tmpfs = False

    def __init__(self, client: docker.DockerClient, url: str) -> None:
        super().__init__(client)
        self._url = url
        self._etc = _pod_etc()

    @classmethod
    def connect_socket(
        cls, timeout: int = 300, container_host: str | None = None, xdg_runtime_dir: str | None = None
    ) -> PodmanEngine:
        """The Podman API at CONTAINER_HOST (never started: it was named), else the user's socket, whose service is
        started when it does not answer."""
        url = podman_socket(container_host, xdg_runtime_dir)
        if not api_answers(url):
            if container_host:
                raise EngineUnavailable(f"no Podman API answers at CONTAINER_HOST={redact_host(url)}")
            _start_service(url)
        return cls(docker.DockerClient(base_url=url, timeout=timeout), url)

    def address(self) -> str | None:
        return self._url

    def writable_limits(self, writable: dict[str, str]) -> dict[str, str]:
        return {
            p: f"{size} asked; not applied (Podman tmpfs volumes take no size)" for p, size in sorted(writable.items())
        }

    def import_command(self) -> list[str]:
        return ["podman", "import"]

    def import_image(self, tag: str) -> str | None:
        """From the Docker engine on this machine, when there is one and it has the tag."""
        try:
            source = docker.DockerClient(base_url="unix:///var/run/docker.sock", timeout=600)
        except Exception:  # no Docker engine here: the image is built instead
            return None
        try:
            try:
                source.images.get(tag)
            except Exception:
                return None
            log.info("importing image from Docker", image=tag)
            return transfer_image(source, self.client, tag)
        finally:
            source.close()

    def _tmpfs_volume_options(self, size: str) -> str:
        return "uid=1000,gid=1000"

    def _entry(self, spec: ContainerSpec) -> tuple[list[str] | None, list[str] | None]:
        # Podman's compatible API reads an empty entrypoint as "not given" and keeps the image's: the command's
        # first word becomes the entrypoint instead, which is what clearing it means.
        if spec.entrypoint == [] and spec.command:
            return spec.command[:1], spec.command[1:]
        return spec.entrypoint, spec.command

    def _adapt(self, spec: ContainerSpec, host_kwargs: dict[str, Any], binds: dict[str, dict[str, str]]) -> None:
        host_kwargs.pop("dns", None)
        host_kwargs.pop("extra_hosts", None)
        if spec.network == "none" or (spec.network or "").startswith("container:"):
            binds[str(self._etc / "hosts")] = {"bind": "/etc/hosts", "mode": "ro"}
            binds[str(self._etc / "resolv.conf")] = {"bind": "/etc/resolv.conf", "mode": "ro"}
        host_kwargs["ulimits"] = [
            docker.types.Ulimit(name=name, soft=soft, hard=hard) for name, (soft, hard) in PODMAN_ULIMITS.items()
        ]
        if "tmpfs" in host_kwargs:
            # Podman copies the image's directory into a tmpfs (keeping its 0700 mode) and refuses uid=/gid=:
            # `U` hands the mount to the container's user instead, as Docker's uid/gid options do.
            host_kwargs["tmpfs"] = {
                path: ",".join([o for o in opts.split(",") if not o.startswith(("uid=", "gid="))] + ["mode=1777", "U"])
                for path, opts in host_kwargs["tmpfs"].items()
            }
