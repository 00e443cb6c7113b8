"""Container runtimes behind one small interface (a pod: proxy + harness); Docker's API first."""

from __future__ import annotations

from orchestrator.runtime.docker import (
    Engine,
    EngineAPIError,
    EngineError,
    EngineUnavailable,
    ImageNotFound,
    RunningContainer,
)
from orchestrator.runtime.interrupts import deferred_interrupts, install_interrupt_handlers, received_signal
from orchestrator.runtime.pod import LOOPBACK, PROVIDER_HOST, ContainerHandle, Pod, PodRuntime, PodSpec
from orchestrator.runtime.spec import RUN_LABEL, ContainerSpec, Owner, create_labels, redact_host

__all__ = [
    "LOOPBACK",
    "PROVIDER_HOST",
    "RUN_LABEL",
    "ContainerHandle",
    "ContainerSpec",
    "Engine",
    "EngineAPIError",
    "EngineError",
    "EngineUnavailable",
    "ImageNotFound",
    "Owner",
    "Pod",
    "PodRuntime",
    "PodSpec",
    "RunningContainer",
    "create_labels",
    "deferred_interrupts",
    "install_interrupt_handlers",
    "received_signal",
    "redact_host",
]
