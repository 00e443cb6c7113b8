"""The pod on a Docker-API engine: a proxy with `network_mode=none`, a harness in the proxy's namespace."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from orchestrator.runtime.pod import LOOPBACK, PROVIDER_HOST, PodSpec

if TYPE_CHECKING:
    from orchestrator.runtime.docker import Engine, RunningContainer

__all__ = ["HELD_DIR", "DockerPod", "docker_pod"]

# Where the proxy mounts (read-only, never reads) the harness's in-memory volumes: a tmpfs volume keeps its
# content only while mounted somewhere, and the harness's logs must outlive its exit until they are collected.
HELD_DIR = "/probe/held"


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
        harness["writable"] = self._engine.writable_limits(self._spec.writable)
        return {"proxy": self._engine.effective_limits(self._proxy), "harness": harness}


@contextmanager
def docker_pod(engine: Engine, spec: PodSpec) -> Iterator[DockerPod]:
    """Volumes, a started and ready proxy, a created harness; removed in reverse order however the block ends."""
    with ExitStack() as stack:
        shared = stack.enter_context(engine.volume(f"{spec.name}-shared", spec.labels))
        held: dict[str, str] = {}
        for i, (path, size) in enumerate(sorted(spec.writable.items())):
            vol = stack.enter_context(engine.volume(f"{spec.name}-w{i}", spec.labels, tmpfs_size=size))
            held[path] = str(vol.name)
        proxy_spec = replace(
            spec.proxy,
            network="none",
            # The harness shares the proxy's resolv.conf and hosts: its resolver is the proxy's DNS listener.
            dns=[LOOPBACK],
            extra_hosts={PROVIDER_HOST: LOOPBACK},
            volumes={
                **spec.proxy.volumes,
                str(shared.name): {"bind": spec.shared, "mode": "ro"},
                **{vol: {"bind": f"{HELD_DIR}/{i}", "mode": "ro"} for i, vol in enumerate(held.values())},
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
        # Created (not started) while the proxy starts up: its namespace exists once the proxy runs.
        harness = stack.enter_context(engine.container(harness_spec))
        proxy.wait_for_log(spec.ready_log, spec.ready_timeout)
        yield DockerPod(engine, proxy, harness, spec)
