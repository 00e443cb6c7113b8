"""A PodRuntime that starts nothing: pods are labels, set-ups recorded, failures made to order (mypy-checked)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from orchestrator.runtime.pod import ContainerHandle, Pod, PodRuntime, PodSpec
from orchestrator.runtime.spec import ContainerSpec

__all__ = ["FakePod", "FakeRuntime", "as_runtime"]


class FakePod:
    """A pod with no containers: what is tested holds, takes and removes it, and never looks inside."""

    def __init__(self, label: str) -> None:
        self.label = label

    @property
    def proxy(self) -> ContainerHandle:
        raise NotImplementedError("a fake pod has no proxy container")

    @property
    def harness(self) -> ContainerHandle:
        raise NotImplementedError("a fake pod has no harness container")

    def limits(self) -> dict[str, Any]:
        return {}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FakePod) and other.label == self.label

    def __hash__(self) -> int:
        return hash(self.label)

    def __repr__(self) -> str:
        return f"FakePod({self.label!r})"


class FakeRuntime:
    """Pods keyed by `key(spec)` (tests pass plain strings as specs); `failing` keys fail every set-up, and the
    first `failures` set-ups fail whatever they are (as a name still in use after a crash would)."""

    name = "fake"
    image_archives: Path | None = None

    def __init__(
        self,
        failing: frozenset[str] = frozenset(),
        failures: int = 0,
        key: Callable[[PodSpec], str] = str,
    ) -> None:
        self.failing = failing
        self.failures = failures
        self.key = key
        self.up: list[str] = []
        self.removed: list[str] = []
        self.entered = 0
        self.exited = 0
        self.lock = threading.Lock()

    def describe(self) -> dict[str, Any]:
        return {"runtime": self.name, "server_version": "fake", "docker_host": None, "rootless": True}

    def pod(self, spec: PodSpec) -> AbstractContextManager[Pod]:
        return self._pod(self.key(spec))

    @contextmanager
    def _pod(self, key: str) -> Iterator[Pod]:
        with self.lock:
            if key in self.failing:
                raise RuntimeError(f"no pod {key}")
            if self.failures > 0:
                self.failures -= 1
                raise RuntimeError(f"no pod {key}: container name is already in use")
            self.up.append(key)
            self.entered += 1
        try:
            yield FakePod(f"pod {key}")
        finally:
            with self.lock:
                self.removed.append(key)
                self.exited += 1

    def run_once(self, spec: ContainerSpec, timeout: float) -> tuple[int | None, bytes]:
        return 0, b"fake 1.0\n"

    def sweep(self) -> list[str]:
        return []

    def cleanup(self, run_id: str | None = None, spared: dict[str, str] | None = None) -> dict[str, int]:
        return {"containers": 0, "networks": 0, "volumes": 0}


def as_runtime(fake: FakeRuntime) -> PodRuntime:
    """The fake, typed as the protocol: mypy checks here, once, that FakeRuntime is a PodRuntime (no cast)."""
    return fake
