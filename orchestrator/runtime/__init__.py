"""Container runtimes behind one small interface; Docker's API (and Podman's or Lima's socket) first."""

from __future__ import annotations

from orchestrator.runtime.docker import (
    ContainerSpec,
    Engine,
    EngineUnavailable,
    RunningContainer,
    create_labels,
)

__all__ = ["ContainerSpec", "Engine", "EngineUnavailable", "RunningContainer", "create_labels"]
