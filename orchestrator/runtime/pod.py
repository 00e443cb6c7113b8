"""The pod: one episode's proxy and harness in one network namespace that has only loopback.

The proxy starts with no network at all; the harness joins the proxy's namespace. `provider` is
127.0.0.1 and the resolver is the proxy's DNS listener on 127.0.0.1:53, so every lookup is witnessed;
a connect to any other address fails in the kernel (no route). Only the shared directory (markers)
is mounted in both, read-only for the proxy. Both root filesystems are read-only; the paths each
writes (the harness's, the proxy's witness folder) are in-memory filesystems that outlive the
process's exit until the pod ends, so its logs and the witness can be collected, each size-capped
where the runtime can (`limits()` says what held). A backend (Docker, Podman, Apptainer) gives this
shape its own way.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from orchestrator.runtime.collect import Collection
from orchestrator.runtime.spec import ContainerSpec

__all__ = ["LOOPBACK", "PROVIDER_HOST", "ContainerHandle", "Pod", "PodRuntime", "PodSpec"]

LOOPBACK = "127.0.0.1"
PROVIDER_HOST = "provider"


@dataclass
class PodSpec:
    """Two containers and what they share; the backend sets their network, resolver and hosts entry."""

    name: str  # prefix of every object the pod creates
    labels: dict[str, str]
    proxy: ContainerSpec
    harness: ContainerSpec
    shared: str  # the one directory both see: read-write for the harness, read-only for the proxy
    # Its size cap: it holds one small marker file per tool call (a tmpfs file takes a 4 KiB page), far below this.
    shared_size: str = "64m"
    writable: dict[str, str] = field(default_factory=dict)  # harness path -> size cap ("512m")
    # Proxy path -> size cap: the only paths it writes (the witness folder), on a root filesystem that is read-only.
    proxy_writable: dict[str, str] = field(default_factory=dict)
    ready_log: bytes = b""  # the proxy is ready once its output holds this
    ready_timeout: float = 60.0


class ContainerHandle(Protocol):
    """One container of a pod, as the episode drives it."""

    @property
    def name(self) -> str: ...

    def start(self) -> None: ...

    def wait(self, timeout: float) -> int | None: ...

    def kill(self) -> None: ...

    def stop(self, timeout: int = 10) -> None: ...

    def logs(self) -> bytes: ...

    def save_logs(self, dest: Path, collection: Collection) -> None:
        """stdout + stderr to `dest`, head and tail kept under the episode's caps."""
        ...

    def copy_out(self, path: str, dest: Path, collection: Collection) -> bool:
        """`path` (file or folder) below `dest` under its own name, within the caps; False if absent. Links and
        special files are not copied but recorded as findings."""
        ...


class Pod(Protocol):
    """A started proxy (ready) and a created harness; everything goes away when the context ends.

    Collect from the harness before stopping the proxy (a backend may hold the harness's writable paths with it).
    """

    @property
    def proxy(self) -> ContainerHandle: ...

    @property
    def harness(self) -> ContainerHandle: ...

    def limits(self) -> dict[str, Any]:
        """The effective limits of both containers, as the runtime reports them (for runtime.json)."""
        ...


class PodRuntime(Protocol):
    """What the suite and an episode need of a runtime (Docker, Podman, Apptainer); nothing else is runtime-specific.

    `image_archives`: where images come from when the runtime cannot build them (Apptainer: the directory
    `harness-probe images export` wrote); None for a runtime that builds from images/ itself.
    """

    name: str
    image_archives: Path | None

    def describe(self) -> dict[str, Any]:
        """For runtime.json: runtime name, version, address without credentials, rootless or not."""
        ...

    def pod(self, spec: PodSpec) -> AbstractContextManager[Pod]: ...

    def run_once(self, spec: ContainerSpec, timeout: float) -> tuple[int | None, bytes]:
        """One hardened container to its end (version probes): exit code (None: killed at timeout) and output."""
        ...

    def sweep(self) -> list[str]:
        """Remove what runs whose process is gone left behind; never a live run's objects."""
        ...

    def cleanup(self, run_id: str | None = None, spared: dict[str, str] | None = None) -> dict[str, int]:
        """Remove what runs left (all, or one); with `spared`, leave runs whose owner may live and name them there."""
        ...
