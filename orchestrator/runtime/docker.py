"""The Docker engine seen through the docker SDK: labelled networks, volumes and containers that always go away."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import docker
import docker.errors
import docker.types
import structlog
from docker.models.volumes import Volume

from orchestrator.errors import CleanupIncomplete, EngineUnavailable
from orchestrator.runtime.docker_container import REMOVE_SECONDS, RunningContainer
from orchestrator.runtime.docker_pod import DockerPod, docker_pod
from orchestrator.runtime.interrupts import deferred_interrupts
from orchestrator.runtime.ping import UNIX_SCHEMES, api_answers
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
    live_owner,
    redact_host,
)

log = structlog.get_logger(__name__)


__all__ = [
    "RUN_LABEL",
    "CleanupIncomplete",
    "ContainerSpec",
    "Engine",
    "EngineAPIError",
    "EngineError",
    "EngineUnavailable",
    "ImageNotFound",
    "RunningContainer",
    "create_labels",
]

# The SDK's errors, named here so that code outside orchestrator/runtime/ (images, versions) catches them without
# importing docker itself: only this package talks to the SDK (an import-linter contract in pyproject.toml).
EngineError = docker.errors.DockerException
EngineAPIError = docker.errors.APIError
ImageNotFound = docker.errors.ImageNotFound

# A removal that failed in a clean-up is tried once more after this long (a container's removal in flight ends).
CLEANUP_RETRY_SECONDS = 1.0


class Engine:
    """One connection to a Docker-API engine; DOCKER_HOST is honoured, so Podman's and Lima's sockets work."""

    def __init__(self, client: docker.DockerClient) -> None:
        self.client = client
        self._described: dict[str, Any] | None = None
        self._host: str | None = None

    @classmethod
    def connect(cls, timeout: int = 300, docker_env: Mapping[str, str] | None = None) -> Engine:
        """The engine at DOCKER_HOST (in `docker_env`, the DOCKER_* variables the CLI read), else the default socket."""
        env = dict(docker_env or {})
        host = env.get("DOCKER_HOST") or None
        where = f"DOCKER_HOST={redact_host(host)}" if host else "the default socket (unix:///var/run/docker.sock)"
        url = host or "unix:///var/run/docker.sock"
        try:
            if url.startswith(UNIX_SCHEMES) and not api_answers(url):
                raise EngineUnavailable("nothing answers a ping on that socket")
            client = docker.from_env(timeout=timeout, environment=env)
            client.ping()
        except Exception as exc:
            raise EngineUnavailable(
                f"No Docker engine answers at {where}: {exc}. Start one (dockerd, Docker Desktop, "
                "'podman system service', Lima) or point DOCKER_HOST at its socket."
            ) from exc
        engine = cls(client)
        engine._host = host
        return engine

    name = "docker"
    rooted_archive_names = False  # see RunningContainer.rooted_names
    sized_tmpfs = True  # its in-memory volumes take a size cap (Podman's do not)
    image_archives: Path | None = None  # builds from images/ itself

    def server_version(self) -> str:
        return str(self.client.version().get("Version", "unknown"))

    def rootless(self) -> bool:
        # Docker lists `name=rootless` among its security options; Podman's compatible API has a `Rootless` key.
        info = self.client.info()
        return bool(info.get("Rootless")) or any("rootless" in str(o) for o in info.get("SecurityOptions", []))

    def describe(self) -> dict[str, Any]:
        """For runtime.json: which runtime, its version, where (no credentials), rootless or not.

        Asked once per engine connection (two API calls), not once per episode: a run talks to one engine.
        """
        if self._described is None:
            self._described = {
                "runtime": self.name,
                "server_version": self.server_version(),
                "docker_host": redact_host(self.address()),
                "rootless": self.rootless(),
            }
        return dict(self._described)

    def address(self) -> str | None:
        """Where this engine's API is; None for Docker's default socket."""
        return self._host

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
        entrypoint, command = self._entry(spec)
        created = self.client.api.create_container(
            image=spec.image,
            name=spec.name,
            command=command,
            entrypoint=entrypoint,
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

    def _entry(self, spec: ContainerSpec) -> tuple[list[str] | None, list[str] | None]:
        """The entrypoint and command to create with (an empty entrypoint clears the image's, as `--entrypoint ''`)."""
        return spec.entrypoint, spec.command

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

    def cleanup(self, run_id: str | None = None, spared: dict[str, str] | None = None) -> dict[str, int]:
        """Remove every container, network and volume we labelled (all runs, or one).

        With `spared` (run id -> owner label), objects whose owner process may still be alive are left alone and
        their runs named there; without it everything labelled goes (a run removing its own objects, --force).
        One removal that fails never stops the others; what failed is tried once more after them (a volume is in
        use until the container holding it, maybe being removed right now by its episode, is gone), and what is
        still there then is named in a `CleanupIncomplete`."""
        flt = {"label": f"{RUN_LABEL}={run_id}" if run_id else RUN_LABEL}
        counts = {"containers": 0, "networks": 0, "volumes": 0}
        api = self.client.api
        failed: list[tuple[str, Any, str]] = []
        here = Owner.this_process()

        def spare(labels: dict[str, str] | None) -> bool:
            owner = live_owner(labels, here) if spared is not None else None
            if owner is not None and spared is not None:
                spared[(labels or {}).get(RUN_LABEL, "?")] = owner
            return owner is not None

        def remove(what: str, fn: Any, failures: list[tuple[str, Any, str]]) -> None:
            try:
                fn()
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError as exc:
                failures.append((what, fn, str(exc)[:200]))

        with deferred_interrupts():
            for c in _joiners_first(api.containers(all=True, filters=flt)):
                if spare(c.get("Labels")):
                    continue
                remove(f"container {c['Id'][:12]}", partial(api.remove_container, c["Id"], force=True, v=True), failed)
                counts["containers"] += 1
            for n in api.networks(filters=flt):  # type: ignore[no-untyped-call]
                if spare(n.get("Labels")):
                    continue
                remove(f"network {n['Id'][:12]}", partial(api.remove_network, n["Id"]), failed)
                counts["networks"] += 1
            for v in api.volumes(filters=flt).get("Volumes") or []:
                if spare(v.get("Labels")):
                    continue
                remove(f"volume {v['Name']}", partial(api.remove_volume, v["Name"], force=True), failed)
                counts["volumes"] += 1
            still: list[tuple[str, Any, str]] = []
            if failed:
                time.sleep(CLEANUP_RETRY_SECONDS)
            for what, fn, _ in failed:
                remove(what, fn, still)
        if still:
            raise CleanupIncomplete("could not remove: " + "; ".join(f"{what} ({why})" for what, _, why in still))
        return counts


def _joiners_first(containers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A pod's harness before its proxy: Podman refuses to remove a container others joined ("has dependent
    containers"); Docker does not mind the order."""
    return sorted(containers, key=lambda c: (c.get("Labels") or {}).get(f"{LABEL_NS}.role") == "proxy")


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
