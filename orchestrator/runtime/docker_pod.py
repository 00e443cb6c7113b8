"""The pod on a Docker-API engine: a proxy with `network_mode=none`, a harness in the proxy's namespace, and an idle
holder that keeps the pod's in-memory volumes while either of them ends (or is killed)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import replace
from types import TracebackType
from typing import TYPE_CHECKING, Any

from orchestrator.runtime.pod import LOOPBACK, PROVIDER_HOST, PodSpec
from orchestrator.runtime.spec import ContainerSpec

if TYPE_CHECKING:
    from orchestrator.runtime.docker import Engine, RunningContainer

__all__ = ["HELD_DIR", "HOLDER_COMMAND", "PROXY_SCRATCH", "DockerPod", "docker_pod"]

# Where the holder mounts (read-only, never reads) the pod's in-memory volumes: a tmpfs volume keeps its content only
# while mounted somewhere, and the harness's logs and the proxy's witness must outlive their exits until collected.
# The holder is not the proxy, so a proxy killed for its memory no longer takes the harness's files with it.
HELD_DIR = "/probe/held"
# The holder runs only this (coreutils of the base image every image is built on): it reads nothing and writes nothing.
HOLDER_COMMAND = ["sleep", "infinity"]
HOLDER_MEMORY, HOLDER_CPUS, HOLDER_PIDS = "32m", 0.1, 8
# Scratch space of the proxy's own (Python and mitmproxy write nothing there as configured; a cap if they did).
PROXY_SCRATCH = {"/tmp": "16m"}


class DockerPod:
    def __init__(self, engine: Engine, proxy: RunningContainer, harness: RunningContainer, spec: PodSpec) -> None:
        self._engine = engine
        self._proxy = proxy
        self._harness = harness
        self._spec = spec

    @property
    def proxy(self) -> RunningContainer:
        return self._proxy

    @property
    def harness(self) -> RunningContainer:
        return self._harness

    def limits(self) -> dict[str, Any]:
        harness = self._engine.effective_limits(self._harness)
        shared = {self._spec.shared: self._spec.shared_size} if self._engine.sized_tmpfs else {}
        harness["writable"] = self._engine.writable_limits({**self._spec.writable, **shared})
        proxy = self._engine.effective_limits(self._proxy)
        proxy["writable"] = self._engine.writable_limits(self._spec.proxy_writable)
        return {"proxy": proxy, "harness": harness}


@contextmanager
def docker_pod(engine: Engine, spec: PodSpec) -> Iterator[DockerPod]:
    """Volumes and their holder, a started and ready proxy, a created harness; removed in reverse order however the
    block ends."""
    with ExitStack() as stack:
        # In memory and capped where the engine caps in-memory volumes (Docker), as every other path the harness writes:
        # on disk it would be the one place where the harness could fill the host's disk. Podman's take no size, so
        # there it stays on disk, as it always was (docs/security.md).
        shared_size = spec.shared_size if engine.sized_tmpfs else None
        shared = stack.enter_context(engine.volume(f"{spec.name}-shared", spec.labels, tmpfs_size=shared_size))
        held: dict[str, str] = {}
        for i, (path, size) in enumerate(sorted(spec.writable.items())):
            vol = stack.enter_context(engine.volume(f"{spec.name}-w{i}", spec.labels, tmpfs_size=size))
            held[path] = str(vol.name)
        proxy_held: dict[str, str] = {}
        for i, (path, size) in enumerate(sorted(spec.proxy_writable.items())):
            vol = stack.enter_context(engine.volume(f"{spec.name}-p{i}", spec.labels, tmpfs_size=size))
            proxy_held[path] = str(vol.name)
        # The proxy's own files (its scenario) go in a volume of their own: a read-only root takes no copy into it. On
        # disk, not in memory: only harness-probe writes there (before the proxy starts), so it needs no cap, and its
        # content outlives the copy's own mount without a holder, so the holder's start need not come first.
        files = stack.enter_context(engine.volume(f"{spec.name}-files", spec.labels)) if spec.proxy.files else None
        every = [*([str(shared.name)] if shared_size else []), *held.values(), *proxy_held.values()]
        # The holder starts beside the proxy (a container start is the slowest engine step). It must hold the
        # in-memory volumes before anything is written to them that no running container mounts: the harness's
        # files, copied in at its creation, which waits for it. The proxy's witness is written only while the proxy
        # runs and mounts it.
        holder_up = _start_beside(stack, engine.container(_holder_spec(spec, every))) if every else None
        proxy_spec = replace(
            spec.proxy,
            network="none",
            # The harness shares the proxy's resolv.conf and hosts: its resolver is the proxy's DNS listener.
            dns=[LOOPBACK],
            extra_hosts={PROVIDER_HOST: LOOPBACK},
            read_only=True,
            tmpfs={**PROXY_SCRATCH, **spec.proxy.tmpfs},
            volumes={
                **spec.proxy.volumes,
                str(shared.name): {"bind": spec.shared, "mode": "ro"},
                **{vol: {"bind": path, "mode": "rw"} for path, vol in proxy_held.items()},
                **({str(files.name): {"bind": spec.proxy.files_base, "mode": "rw"}} if files is not None else {}),
            },
        )
        proxy = stack.enter_context(engine.container(proxy_spec))
        proxy.start()
        harness_spec = replace(
            spec.harness,
            network=f"container:{proxy.id}",
            dns=None,
            extra_hosts={},
            read_only=True,
            volumes={
                **spec.harness.volumes,
                str(shared.name): {"bind": spec.shared, "mode": "rw"},
                **{vol: {"bind": path, "mode": "rw"} for path, vol in held.items()},
            },
        )
        if holder_up is not None:
            holder_up()
        # Created (not started) while the proxy starts up: its namespace exists once the proxy runs.
        harness = stack.enter_context(engine.container(harness_spec))
        proxy.wait_for_log(spec.ready_log, spec.ready_timeout)
        yield DockerPod(engine, proxy, harness, spec)


def _start_beside(stack: ExitStack, made: AbstractContextManager[RunningContainer]) -> Callable[[], None]:
    """Create and start a container in a thread of its own; returns the wait for it, which raises what the thread
    raised. Its removal is on `stack` at once: however the pod's block ends, the thread is waited for first, then
    what it created is removed (a creation that failed has removed itself). The thread takes no interrupt (only the
    main thread does): it runs its two engine steps to their end, and the stack removes what they made."""
    made_it: list[RunningContainer] = []
    failed: list[BaseException] = []

    def create_and_start() -> None:
        try:
            made_it.append(made.__enter__())
            made_it[0].start()
        except BaseException as exc:  # raised again in the pod's own thread by wait()
            failed.append(exc)

    thread = threading.Thread(target=create_and_start, name="pod-holder", daemon=True)

    def remove(kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> bool | None:
        if thread.ident is not None:  # it was started
            thread.join()
        return made.__exit__(kind, exc, tb) if made_it else None

    stack.push(remove)
    thread.start()

    def wait() -> None:
        thread.join()
        if failed:
            raise failed[0]

    return wait


def _holder_spec(spec: PodSpec, volumes: list[str]) -> ContainerSpec:
    """An idle container of the proxy's image mounting every in-memory volume read-only: nothing else, no network."""
    return ContainerSpec(
        image=spec.proxy.image,
        name=f"{spec.name}-holder",
        entrypoint=HOLDER_COMMAND[:1],
        command=HOLDER_COMMAND[1:],
        user="probe",
        labels={**spec.labels, "harness-probe.role": "holder"},
        network="none",
        read_only=True,
        mem_limit=HOLDER_MEMORY,
        cpus=HOLDER_CPUS,
        pids_limit=HOLDER_PIDS,
        volumes={vol: {"bind": f"{HELD_DIR}/{i}", "mode": "ro"} for i, vol in enumerate(volumes)},
    )
