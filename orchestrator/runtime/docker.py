"""The Docker engine seen through the docker SDK: labelled networks, volumes and containers that always go away."""

from __future__ import annotations

import contextlib
import io
import os
import tarfile
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path, PurePosixPath
from typing import Any

import docker
import docker.errors
import docker.types
import structlog
from docker.models.containers import Container
from docker.models.volumes import Volume

from orchestrator.runtime.collect import Collection
from orchestrator.runtime.docker_pod import DockerPod, docker_pod
from orchestrator.runtime.interrupts import deferred_interrupts
from orchestrator.runtime.pod import PodSpec
from orchestrator.runtime.spec import (
    LABEL_NS,
    LOG_MAX_FILES,
    LOG_MAX_SIZE,
    OWNER_LABEL,
    RUN_LABEL,
    ContainerSpec,
    Owner,
    create_labels,
    redact_host,
)

log = structlog.get_logger(__name__)

# How long removal keeps trying while the engine is still tearing a container down.
REMOVE_SECONDS = 90.0

__all__ = ["RUN_LABEL", "ContainerSpec", "Engine", "EngineUnavailable", "RunningContainer", "create_labels"]


class EngineUnavailable(RuntimeError):
    """No container engine answered at the configured address."""


class RunningContainer:
    """A created container: put files in, start, wait with a deadline, copy files out, always remove."""

    # Podman 4.3 names the members of a volume mount point's archive '' and `/file` (Docker: `name/file`).
    rooted_names = False

    def __init__(self, container: Container) -> None:
        self._c = container

    @property
    def id(self) -> str:
        return str(self._c.id)

    @property
    def name(self) -> str:
        return str(self._c.name)

    def start(self) -> None:
        self._c.start()

    def logs(self) -> bytes:
        try:
            return bytes(self._c.logs(stdout=True, stderr=True, timestamps=False))
        except docker.errors.APIError:
            return b""

    def wait_for_log(self, needle: bytes, timeout: float) -> None:
        """Readiness by log line; on timeout the container's output goes into the error, since that is the diagnosis."""
        deadline = time.monotonic() + timeout
        why = f"did not print {needle!r} within {timeout:.0f}s"
        while time.monotonic() < deadline:
            self._c.reload()
            if needle in self.logs():
                return
            if self._c.status in ("exited", "dead"):
                why = f"exited before printing {needle!r}"
                break
            time.sleep(0.1)
        text = self.logs().decode(errors="replace")[-4000:]
        raise TimeoutError(f"container {self.name} {why}; its output:\n{text}")

    def wait(self, timeout: float) -> int | None:
        """Exit code, or None if the deadline passed (the caller decides to kill)."""
        try:
            result = self._c.wait(timeout=timeout)
        except Exception as exc:  # the SDK raises requests' ReadTimeout/ConnectionError on deadline
            if "timed out" in str(exc).lower() or "timeout" in type(exc).__name__.lower():
                return None
            raise
        return int(result.get("StatusCode", -1))

    def kill(self) -> None:
        try:
            self._c.kill()  # type: ignore[no-untyped-call]
        except docker.errors.APIError as exc:
            log.debug("kill failed", container=self.name, error=str(exc))

    def stop(self, timeout: int = 10) -> None:
        try:
            self._c.stop(timeout=timeout)
        except docker.errors.APIError as exc:
            log.debug("stop failed", container=self.name, error=str(exc))

    def state(self) -> dict[str, Any]:
        self._c.reload()
        return dict(self._c.attrs.get("State", {}))

    def put_files(self, files: dict[str, bytes], base: str = "/", uid: int = 0, gid: int = 0) -> None:
        """Copy files in below `base` (which must exist); folders created on the way belong to uid:gid."""
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            dirs: set[str] = set()
            for path, data in sorted(files.items()):
                parts = PurePosixPath(path).relative_to(base).parts
                for i in range(1, len(parts)):
                    d = "/".join(parts[:i])
                    if d not in dirs:
                        dirs.add(d)
                        info = tarfile.TarInfo(d)
                        info.type = tarfile.DIRTYPE
                        info.mode = 0o755
                        info.uid, info.gid = uid, gid
                        tar.addfile(info)
                info = tarfile.TarInfo("/".join(parts))
                info.size = len(data)
                info.mode = 0o644
                info.uid, info.gid = uid, gid
                info.mtime = int(time.time())
                tar.addfile(info, io.BytesIO(data))
        if not self._c.put_archive(base, buf.getvalue()):
            raise RuntimeError(f"could not copy files into {self.name}")

    def copy_out(self, path: str, dest: Path, collection: Collection) -> bool:
        """Copy a file or folder out of the container (running or stopped) below dest; False if absent.

        The archive is streamed to disk under the episode's caps; links and special files are findings.
        """
        api: Any = self._c.client.api  # type: ignore[union-attr]
        # identity: the raw tar, never a compressed stream whose size on disk we could not bound by what we read.
        res = api._get(
            api._url("/containers/{0}/archive", self.id),
            params={"path": path},
            headers={"Accept-Encoding": "identity"},
            stream=True,
        )
        try:
            if res.status_code == 404:
                return False
            api._raise_for_status(res)
            sock = api._get_raw_response_socket(res)
            collection.extract(_timed_chunks(res, sock, collection), dest, path, rooted_names=self.rooted_names)
        finally:
            res.close()
        return True

    def save_logs(self, dest: Path, collection: Collection) -> None:
        """stdout + stderr to `dest`, head and tail kept under the episode's caps."""
        api: Any = self._c.client.api  # type: ignore[union-attr]
        try:
            res = api._get(
                api._url("/containers/{0}/logs", self.id),
                params={"stdout": 1, "stderr": 1, "follow": 0, "timestamps": 0},
                headers={"Accept-Encoding": "identity"},
                stream=True,
            )
            api._raise_for_status(res)
        except docker.errors.APIError as exc:
            dest.write_text(f"[harness-probe: logs unavailable: {exc}]\n")
            return
        try:
            sock = api._get_raw_response_socket(res)
            collection.save_log(_demux(_timed_chunks(res, sock, collection)), dest)
        finally:
            res.close()

    def remove(self) -> None:
        # A container full of processes (a fork bomb) can outlast the engine's own kill wait: ask again.
        deadline = time.monotonic() + REMOVE_SECONDS
        while True:
            try:
                self._c.remove(force=True, v=True)
                return
            except docker.errors.NotFound:
                return
            except docker.errors.APIError as exc:
                if time.monotonic() > deadline:
                    log.error("could not remove", container=self.name, error=str(exc))
                    raise
                log.info("container not removed yet; trying again", container=self.name, error=str(exc))
                time.sleep(1.0)


class Engine:
    """One connection to a Docker-API engine; DOCKER_HOST is honoured, so Podman's and Lima's sockets work."""

    def __init__(self, client: docker.DockerClient) -> None:
        self.client = client

    @classmethod
    def connect(cls, timeout: int = 300) -> Engine:
        where = os.environ.get("DOCKER_HOST", "the default socket (unix:///var/run/docker.sock)")
        try:
            client = docker.from_env(timeout=timeout)
            client.ping()
        except Exception as exc:
            raise EngineUnavailable(
                f"No Docker engine answers at {where}: {exc}. Start one (dockerd, Docker Desktop, "
                "'podman system service', Lima) or point DOCKER_HOST at its socket."
            ) from exc
        return cls(client)

    name = "docker"
    rooted_archive_names = False  # see RunningContainer.rooted_names
    image_archives: Path | None = None  # builds from images/ itself

    def server_version(self) -> str:
        return str(self.client.version().get("Version", "unknown"))

    def rootless(self) -> bool:
        # Docker lists `name=rootless` among its security options; Podman's compatible API has a `Rootless` key.
        info = self.client.info()
        return bool(info.get("Rootless")) or any("rootless" in str(o) for o in info.get("SecurityOptions", []))

    def describe(self) -> dict[str, Any]:
        """For runtime.json: which runtime, its version, where (no credentials), rootless or not."""
        return {
            "runtime": self.name,
            "server_version": self.server_version(),
            "docker_host": redact_host(self.address()),
            "rootless": self.rootless(),
        }

    def address(self) -> str | None:
        """Where this engine's API is; None for Docker's default socket."""
        return os.environ.get("DOCKER_HOST")

    def writable_limits(self, writable: dict[str, str]) -> dict[str, str]:
        """The harness's writable paths and the size cap each really has."""
        return dict(sorted(writable.items()))

    @contextmanager
    def volume(self, name: str, labels: dict[str, str], tmpfs_size: str | None = None) -> Iterator[Volume]:
        """A labelled volume, removed however the block ends; with tmpfs_size an in-memory one of that cap.

        An in-memory volume keeps its content only while some container has it mounted (the pod's proxy does).
        """
        opts = None
        if tmpfs_size is not None:
            # Owned by `probe` (images/base) unless the image's own folder there says otherwise (copied up).
            opts = {"type": "tmpfs", "device": "tmpfs", "o": self._tmpfs_volume_options(tmpfs_size)}
        try:
            with deferred_interrupts():
                vol = self.client.volumes.create(name=name, labels=labels, driver="local", driver_opts=opts)
            yield vol
        finally:
            with deferred_interrupts():
                _retry_remove(lambda: self.client.api.remove_volume(name, force=True), f"volume {name}")

    @contextmanager
    def container(self, spec: ContainerSpec) -> Iterator[RunningContainer]:
        """Create (not start) a container; it is removed with its anonymous volumes however the block ends.

        An interrupt during creation is held back until the id is known, and removal runs to its end.
        """
        rc: RunningContainer | None = None
        try:
            with deferred_interrupts():
                rc = self._create(spec)
            if spec.files:
                rc.put_files(spec.files, spec.files_base, *spec.files_owner)
            yield rc
        finally:
            with deferred_interrupts():
                if rc is not None:
                    rc.remove()
                else:
                    # Creation failed or was cut short: the engine may still have made it under our name.
                    with contextlib.suppress(docker.errors.NotFound):
                        self.client.api.remove_container(spec.name, force=True, v=True)

    def _create(self, spec: ContainerSpec) -> RunningContainer:
        host_kwargs: dict[str, Any] = {
            "mem_limit": spec.mem_limit,
            # Equal to the memory limit: no swap, so a memory hog is stopped instead of thrashing the host.
            "memswap_limit": spec.mem_limit,
            "nano_cpus": int(spec.cpus * 1e9),
            "pids_limit": spec.pids_limit,
            "security_opt": ["no-new-privileges:true"],
            "read_only": spec.read_only,
            "log_config": docker.types.LogConfig(
                type="json-file", config={"max-size": LOG_MAX_SIZE, "max-file": str(LOG_MAX_FILES)}
            ),
        }
        if spec.cap_drop_all:
            host_kwargs["cap_drop"] = ["ALL"]
        if spec.dns is not None:
            host_kwargs["dns"] = spec.dns
        if spec.extra_hosts:
            host_kwargs["extra_hosts"] = spec.extra_hosts
        if spec.sysctls:
            host_kwargs["sysctls"] = spec.sysctls
        if spec.tmpfs:
            # Owned by the image's user (root's otherwise); exec, as harnesses run scripts they write.
            uid, gid = spec.tmpfs_owner
            opts = f"uid={uid},gid={gid},exec"
            host_kwargs["tmpfs"] = {path: f"size={size},{opts}" for path, size in spec.tmpfs.items()}
        binds = dict(spec.volumes)
        self._adapt(spec, host_kwargs, binds)
        created = self.client.api.create_container(
            image=spec.image,
            name=spec.name,
            command=spec.command,
            entrypoint=spec.entrypoint,
            environment=spec.environment,
            user=spec.user,
            working_dir=spec.working_dir,
            labels=spec.labels,
            host_config=self.client.api.create_host_config(
                binds=binds or None,
                network_mode=spec.network,
                **host_kwargs,
            ),
        )
        rc = RunningContainer(self.client.containers.get(created["Id"]))
        rc.rooted_names = self.rooted_archive_names
        return rc

    def import_command(self) -> list[str]:
        """The CLI that imports a root filesystem tar into this engine (bootstrapping the Debian root)."""
        return ["docker", "import"]

    def import_image(self, tag: str) -> str | None:
        """Bring `tag` from another engine on this machine, if one has it; None otherwise (then it is built)."""
        return None

    def _tmpfs_volume_options(self, size: str) -> str:
        return f"size={size},uid=1000,gid=1000"

    def _adapt(self, spec: ContainerSpec, host_kwargs: dict[str, Any], binds: dict[str, dict[str, str]]) -> None:
        """Where another engine behind the same API needs the same spec said differently (Podman)."""

    def run_once_bare(self, image: str) -> None:
        """`run --rm IMAGE true` with nothing of ours around it: the yardstick the overhead benchmark compares with."""
        extra: dict[str, Any] = {}
        self._adapt(ContainerSpec(image=image, name="bare"), extra, {})
        self.client.containers.run(image, ["true"], remove=True, network_mode="none", ulimits=extra.get("ulimits"))

    def run_once(self, spec: ContainerSpec, timeout: float) -> tuple[int | None, bytes]:
        """Start, wait at most `timeout` (then kill), and return exit code (None: killed) and output."""
        with self.container(spec) as rc:
            rc.start()
            code = rc.wait(timeout)
            if code is None:
                rc.kill()
            return code, rc.logs()

    def pod(self, spec: PodSpec) -> AbstractContextManager[DockerPod]:
        return docker_pod(self, spec)

    def effective_limits(self, rc: RunningContainer) -> dict[str, Any]:
        """What the engine applied (from inspect), not what we asked for."""
        host = self.client.api.inspect_container(rc.id)["HostConfig"]
        log_cfg = host.get("LogConfig") or {}
        network = str(host.get("NetworkMode") or "")
        return {
            "cpus": (host.get("NanoCpus") or 0) / 1e9 or None,
            "memory_bytes": host.get("Memory") or None,
            "memory_swap_bytes": host.get("MemorySwap") or None,
            "pids": host.get("PidsLimit") or None,
            "cap_drop": list(host.get("CapDrop") or []),
            "security_opt": list(host.get("SecurityOpt") or []),
            "read_only_rootfs": bool(host.get("ReadonlyRootfs")),
            "tmpfs": dict(host.get("Tmpfs") or {}),
            "log": {
                "type": str(log_cfg.get("Type", "")),
                **{k: str(v) for k, v in (log_cfg.get("Config") or {}).items()},
            },
            # A joined namespace is named by role, not by the random id of the proxy container.
            "network": "container:proxy" if network.startswith("container:") else network,
        }

    def sweep(self) -> list[str]:
        """Remove the objects of runs whose process is gone (killed, crashed); never those of a live run.

        Only objects whose owner label names this machine and a process that no longer exists (or whose
        pid now belongs to a younger process) are removed. Objects without an owner label are left alone.
        """
        here = Owner.this_process()
        flt = {"label": OWNER_LABEL}
        removed: list[str] = []

        def dead(labels: dict[str, str] | None) -> bool:
            owner = Owner.parse((labels or {}).get(OWNER_LABEL, ""))
            return owner is not None and owner.is_dead(here)

        # The low-level listings: one call each, no per-object lookup that races other runs' removals.
        api = self.client.api
        with deferred_interrupts():
            for c in _joiners_first(api.containers(all=True, filters=flt)):
                if dead(c.get("Labels")):
                    try:
                        api.remove_container(c["Id"], force=True, v=True)
                    except docker.errors.NotFound:
                        pass
                    except docker.errors.APIError as exc:  # never a reason for this run to fail: said, left
                        log.warning("could not remove a dead run's container", container=c["Id"][:12], error=str(exc))
                        continue
                    removed.append(f"container {c['Names'][0].lstrip('/')} (run {c['Labels'].get(RUN_LABEL)})")
            for v in api.volumes(filters=flt).get("Volumes") or []:
                if dead(v.get("Labels")):
                    with contextlib.suppress(docker.errors.NotFound):
                        api.remove_volume(v["Name"], force=True)
                    removed.append(f"volume {v['Name']} (run {v['Labels'].get(RUN_LABEL)})")
            for n in api.networks(filters=flt):  # type: ignore[no-untyped-call]
                if dead(n.get("Labels")):
                    with contextlib.suppress(docker.errors.NotFound):
                        api.remove_network(n["Id"])
                    removed.append(f"network {n['Name']} (run {n['Labels'].get(RUN_LABEL)})")
        if removed:
            log.warning("removed what runs that no longer exist left behind", objects=removed)
        return removed

    def cleanup(self, run_id: str | None = None) -> dict[str, int]:
        """Remove every container, network and volume we labelled (all runs, or one)."""
        flt = {"label": f"{RUN_LABEL}={run_id}" if run_id else RUN_LABEL}
        counts = {"containers": 0, "networks": 0, "volumes": 0}
        api = self.client.api
        with deferred_interrupts():
            for c in _joiners_first(api.containers(all=True, filters=flt)):
                with contextlib.suppress(docker.errors.NotFound):
                    api.remove_container(c["Id"], force=True, v=True)
                counts["containers"] += 1
            for n in api.networks(filters=flt):  # type: ignore[no-untyped-call]
                with contextlib.suppress(docker.errors.NotFound):
                    api.remove_network(n["Id"])
                counts["networks"] += 1
            for v in api.volumes(filters=flt).get("Volumes") or []:
                with contextlib.suppress(docker.errors.NotFound):
                    api.remove_volume(v["Name"], force=True)
                counts["volumes"] += 1
        return counts


def _joiners_first(containers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A pod's harness before its proxy: Podman refuses to remove a container others joined ("has dependent
    containers"); Docker does not mind the order."""
    return sorted(containers, key=lambda c: (c.get("Labels") or {}).get(f"{LABEL_NS}.role") == "proxy")


def _timed_chunks(res: Any, sock: Any, collection: Collection) -> Iterator[bytes]:
    # The SDK disables the socket timeout on streams; every read here gets what is left of the deadline.
    # Unix-socket and TLS responses wrap the socket differently; set the deadline on whichever can take it.
    targets: list[Any] = [s for s in (sock, getattr(sock, "_sock", None)) if hasattr(s, "settimeout")]
    while True:
        for s in targets:
            s.settimeout(max(0.05, collection.remaining_seconds()))
        chunk = res.raw.read(1 << 16)
        if not chunk:
            return
        yield bytes(chunk)


def _demux(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """The engine's multiplexed log stream (8-byte frame headers) as plain bytes, stdout and stderr in order."""
    buf = bytearray()
    framed = True
    for chunk in chunks:
        if not framed:
            yield chunk
            continue
        buf += chunk
        while len(buf) >= 8:
            if buf[0] not in (0, 1, 2) or buf[1:4] != b"\0\0\0":
                framed = False  # a TTY container's logs are not framed
                yield bytes(buf)
                buf.clear()
                break
            size = int.from_bytes(buf[4:8], "big")
            if len(buf) < 8 + size:
                break
            yield bytes(buf[8 : 8 + size])
            del buf[: 8 + size]
    if buf:
        yield bytes(buf)


def _retry_remove(fn: Any, what: str) -> None:
    # Removal can race the engine's own teardown of a just-removed container; retrying avoids a leak.
    deadline = time.monotonic() + REMOVE_SECONDS
    while True:
        try:
            fn()
            return
        except docker.errors.NotFound:
            return
        except docker.errors.APIError as exc:
            if time.monotonic() > deadline:
                log.error("could not remove", what=what, error=str(exc))
                raise
            time.sleep(0.5)
