"""The Docker engine seen through the docker SDK: labelled networks, volumes and containers that always go away."""

from __future__ import annotations

import contextlib
import io
import os
import tarfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import docker
import docker.errors
import structlog
from docker.models.containers import Container
from docker.models.networks import Network
from docker.models.volumes import Volume

from orchestrator import __version__
from orchestrator.runtime.collect import Collection

log = structlog.get_logger(__name__)

LABEL_NS = "harness-probe"
RUN_LABEL = f"{LABEL_NS}.run"

__all__ = ["RUN_LABEL", "ContainerSpec", "Engine", "EngineUnavailable", "RunningContainer", "create_labels"]


class EngineUnavailable(RuntimeError):
    """No container engine answered at the configured address."""


def create_labels(run_id: str, **extra: str) -> dict[str, str]:
    """Every object we create carries these, so `harness-probe cleanup` and tests can find leftovers."""
    for key in extra:
        if key.startswith(LABEL_NS):
            raise ValueError(f"label {key!r} uses the reserved namespace {LABEL_NS!r}")
    labels = {RUN_LABEL: run_id, f"{LABEL_NS}.version": __version__}
    labels.update({f"{LABEL_NS}.{k}": v for k, v in extra.items()})
    return labels


@dataclass
class ContainerSpec:
    """What to start; the harness and proxy presets fill one each."""

    image: str
    name: str
    command: list[str] | None = None
    entrypoint: list[str] | None = None
    environment: dict[str, str] = field(default_factory=dict)
    user: str | None = None
    working_dir: str | None = None
    network: str | None = None
    aliases: list[str] = field(default_factory=list)
    volumes: dict[str, dict[str, str]] = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)  # absolute path below files_base -> content
    files_base: str = "/"
    files_owner: tuple[int, int] = (0, 0)
    labels: dict[str, str] = field(default_factory=dict)
    mem_limit: str = "2g"
    pids_limit: int = 512
    cap_drop_all: bool = True
    dns: list[str] | None = None
    sysctls: dict[str, str] = field(default_factory=dict)


class RunningContainer:
    """A created container: put files in, start, wait with a deadline, copy files out, always remove."""

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

    def address(self, network: str) -> str:
        """The container's IPv4 address on one of its networks."""
        self._c.reload()
        return str(self._c.attrs["NetworkSettings"]["Networks"][network]["IPAddress"])

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
            collection.extract(_timed_chunks(res, sock, collection), dest, path)
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
        with contextlib.suppress(docker.errors.NotFound):
            self._c.remove(force=True, v=True)


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

    def server_version(self) -> str:
        return str(self.client.version().get("Version", "unknown"))

    @contextmanager
    def network(self, name: str, labels: dict[str, str]) -> Iterator[Network]:
        """An internal network: containers on it reach each other and nothing else."""
        net = self.client.networks.create(name, driver="bridge", internal=True, labels=labels, check_duplicate=True)
        try:
            yield net
        finally:
            _retry_remove(net.remove, f"network {name}")

    @contextmanager
    def volume(self, name: str, labels: dict[str, str]) -> Iterator[Volume]:
        vol = self.client.volumes.create(name=name, labels=labels)
        try:
            yield vol
        finally:
            _retry_remove(lambda: vol.remove(force=True), f"volume {name}")

    @contextmanager
    def container(self, spec: ContainerSpec) -> Iterator[RunningContainer]:
        """Create (not start) a container; it is removed with its anonymous volumes however the block ends."""
        security = ["no-new-privileges:true"]
        host_kwargs: dict[str, Any] = {
            "mem_limit": spec.mem_limit,
            "pids_limit": spec.pids_limit,
            "security_opt": security,
        }
        if spec.cap_drop_all:
            host_kwargs["cap_drop"] = ["ALL"]
        if spec.dns is not None:
            host_kwargs["dns"] = spec.dns
        if spec.sysctls:
            host_kwargs["sysctls"] = spec.sysctls
        networking = None
        if spec.network:
            networking = {spec.network: self.client.api.create_endpoint_config(aliases=spec.aliases or None)}
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
                binds={k: v for k, v in spec.volumes.items()} or None,
                network_mode=spec.network,
                **host_kwargs,
            ),
            networking_config=self.client.api.create_networking_config(networking) if networking else None,
        )
        rc = RunningContainer(self.client.containers.get(created["Id"]))
        try:
            if spec.files:
                rc.put_files(spec.files, spec.files_base, *spec.files_owner)
            yield rc
        finally:
            rc.remove()

    def cleanup(self, run_id: str | None = None) -> dict[str, int]:
        """Remove every container, network and volume we labelled (all runs, or one)."""
        flt = {"label": f"{RUN_LABEL}={run_id}" if run_id else RUN_LABEL}
        counts = {"containers": 0, "networks": 0, "volumes": 0}
        for c in self.client.containers.list(all=True, filters=flt):
            c.remove(force=True, v=True)
            counts["containers"] += 1
        for n in self.client.networks.list(filters=flt):
            n.remove()
            counts["networks"] += 1
        for v in self.client.volumes.list(filters=flt):
            v.remove(force=True)
            counts["volumes"] += 1
        return counts


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
    # Removal can race the engine's own teardown of a just-removed container; a short retry avoids a leak.
    for attempt in range(10):
        try:
            fn()
            return
        except docker.errors.NotFound:
            return
        except docker.errors.APIError as exc:
            if attempt == 9:
                log.error("could not remove", what=what, error=str(exc))
                raise
            time.sleep(0.3)
