"""`runtime.json`: which engine, images, launch and limits produced an episode, so a result names its making."""
# No `from __future__ import annotations`: TypedDict reads NotRequired/Required from evaluated annotations.

from typing import NotRequired, TypedDict

__all__ = [
    "EngineInfo",
    "HarnessOverride",
    "ImageInfo",
    "LaunchRecord",
    "Limits",
    "LimitsPair",
    "RuntimeRecord",
    "ToolInfo",
]


class ToolInfo(TypedDict):
    version: str
    git_commit: str | None
    git_dirty: bool | None


class EngineInfo(TypedDict):
    runtime: str
    server_version: str
    docker_host: str | None
    rootless: bool | None


class ImageInfo(TypedDict):
    name: str
    tag: str
    image_id: str
    inputs_sha256: str
    files: dict[str, str]
    version: str | None


class LaunchRecord(TypedDict):
    command: list[str]
    environment: dict[str, str]
    files: dict[str, str]
    options: dict[str, str]


class Limits(TypedDict):
    cpus: float | None
    memory: NotRequired[str]
    memory_swap: NotRequired[str]
    memory_bytes: NotRequired[int | None]
    memory_swap_bytes: NotRequired[int | None]
    pids: NotRequired[int | None]
    cap_drop_all: NotRequired[bool]
    cap_drop: NotRequired[list[str]]
    no_new_privileges: NotRequired[bool]
    security_opt: NotRequired[list[str]]
    read_only_rootfs: bool
    tmpfs: dict[str, str]
    writable: NotRequired[dict[str, str]]
    log_max_bytes: NotRequired[str]
    log: NotRequired[dict[str, str]]
    network: str | None


class LimitsPair(TypedDict):
    proxy: Limits
    harness: Limits


class HarnessOverride(TypedDict):
    """The pin overridden by `run --harness-version` / `--harness-source` (orchestrator/variants/)."""

    kind: str
    pinned: str | None
    package: NotRequired[str]
    version: NotRequired[str]
    source: NotRequired[str]
    source_kind: NotRequired[str]
    ran: NotRequired[str | None]
    source_sha256: NotRequired[str]


class RuntimeRecord(TypedDict):
    schema: str
    tool: NotRequired[ToolInfo]
    engine: EngineInfo
    harness: ImageInfo
    proxy: ImageInfo
    launch: LaunchRecord
    scenario_sha256: str
    harness_override: NotRequired[HarnessOverride]
    limits: LimitsPair
