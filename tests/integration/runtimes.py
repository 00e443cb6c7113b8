"""Podman set up for the runtime tests: the root service, and a rootless one run by a user of its own."""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import time
from pathlib import Path

import docker

from orchestrator.runtime.ping import api_answers

ROOTLESS_USER = "hp-rootless"
STORAGE_CONF = """[storage]
driver = "overlay"
[storage.options.overlay]
mount_program = "/usr/bin/fuse-overlayfs"
"""


def podman_missing() -> str | None:
    """Why the Podman tests cannot run here, or None."""
    if shutil.which("podman") is None:
        return "podman is not installed (.ci/run installs Debian's podman)"
    return None


def rootless_missing() -> str | None:
    if reason := podman_missing():
        return reason
    if os.geteuid() != 0:
        return "setting up a rootless Podman user needs root"
    for tool in ("newuidmap", "useradd"):
        if shutil.which(tool) is None:
            return f"{tool} is missing (apt-get install uidmap)"
    if not Path("/usr/bin/fuse-overlayfs").exists():
        return "fuse-overlayfs is missing (apt-get install fuse-overlayfs)"
    return None


def start_rootless_service() -> tuple[str, subprocess.Popen[bytes]]:
    """A user with subordinate ids, overlay storage through fuse-overlayfs, and its own API service."""
    try:
        pw = pwd.getpwnam(ROOTLESS_USER)
    except KeyError:
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", ROOTLESS_USER], check=True)
        pw = pwd.getpwnam(ROOTLESS_USER)
    conf = Path(pw.pw_dir) / ".config" / "containers"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "storage.conf").write_text(STORAGE_CONF)
    runtime_dir = Path(f"/run/user/{pw.pw_uid}")
    (runtime_dir / "podman").mkdir(parents=True, exist_ok=True)
    for d in (Path(pw.pw_dir) / ".config", conf, runtime_dir, runtime_dir / "podman"):
        os.chown(d, pw.pw_uid, pw.pw_gid)
    runtime_dir.chmod(0o700)
    url = f"unix://{runtime_dir}/podman/podman.sock"
    env = {"HOME": pw.pw_dir, "XDG_RUNTIME_DIR": str(runtime_dir), "PATH": os.environ["PATH"], "USER": ROOTLESS_USER}
    proc = subprocess.Popen(
        ["podman", "system", "service", "--time=0", url],
        env=env,
        user=pw.pw_uid,
        group=pw.pw_gid,
        extra_groups=[],
        cwd=pw.pw_dir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while not api_answers(url):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            proc.wait(10)
            raise RuntimeError(f"rootless podman service did not answer at {url}")
        time.sleep(0.3)
    return url, proc


def stop_service(proc: subprocess.Popen[bytes]) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def podman_labelled(url: str, run_id: str) -> list[str]:
    """Containers, volumes and pods of the run that the Podman engine at `url` still has."""
    client = docker.DockerClient(base_url=url, timeout=30)
    try:
        flt = {"label": f"harness-probe.run={run_id}"}
        found = [f"container {c.name}" for c in client.containers.list(all=True, filters=flt)]
        found += [f"volume {v.name}" for v in client.volumes.list(filters=flt)]
    finally:
        client.close()
    return found
