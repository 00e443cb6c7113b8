"""The Docker pod's shape, against a recording engine: who mounts which volume, how, and on what root."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, cast

from orchestrator.runtime.docker import Engine
from orchestrator.runtime.docker_pod import HELD_DIR, HOLDER_COMMAND, docker_pod
from orchestrator.runtime.pod import PodSpec
from orchestrator.runtime.spec import ContainerSpec


@dataclass
class _Volume:
    name: str


@dataclass
class _Container:
    spec: ContainerSpec
    log: list[str]
    id: str = "c0"

    def start(self) -> None:
        self.log.append(f"start {self.spec.name}")

    def wait_for_log(self, needle: bytes, timeout: float) -> None:
        self.log.append(f"ready {self.spec.name}")


@dataclass
class RecordingEngine:
    """Records volumes (with their tmpfs caps) and containers in the order the pod makes them."""

    log: list[str] = field(default_factory=list)
    volumes: dict[str, str | None] = field(default_factory=dict)
    sized_tmpfs: bool = True
    containers: dict[str, ContainerSpec] = field(default_factory=dict)

    @contextmanager
    def volume(self, name: str, labels: dict[str, str], tmpfs_size: str | None = None) -> Iterator[_Volume]:
        self.volumes[name] = tmpfs_size
        self.log.append(f"volume {name}")
        try:
            yield _Volume(name)
        finally:  # as the engine's: however the block ends
            self.log.append(f"remove volume {name}")

    @contextmanager
    def container(self, spec: ContainerSpec) -> Iterator[_Container]:
        self.containers[spec.name] = spec
        self.log.append(f"create {spec.name}")
        try:
            yield _Container(spec, self.log)
        finally:
            self.log.append(f"remove {spec.name}")


def _spec() -> PodSpec:
    return PodSpec(
        name="ep",
        labels={"harness-probe.run": "r"},
        proxy=ContainerSpec(
            image="proxy:1",
            name="ep-proxy",
            files={"/probe/scenario/scenario.json": b"{}"},
            files_base="/probe/scenario",
        ),
        harness=ContainerSpec(image="harness:1", name="ep-harness"),
        shared="/probe/markers",
        writable={"/home/probe": "512m"},
        proxy_writable={"/probe/witness": "96m"},
    )


def test_the_holder_keeps_every_in_memory_volume_and_the_proxy_root_is_read_only() -> None:
    engine = RecordingEngine()
    with docker_pod(cast(Engine, engine), _spec()):
        pass
    holder, proxy, harness = (engine.containers[n] for n in ("ep-holder", "ep-proxy", "ep-harness"))
    in_memory = {name for name, size in engine.volumes.items() if size is not None}
    assert in_memory == {"ep-shared", "ep-w0", "ep-p0"}
    # The markers folder too: on disk it would be the one place where the harness could fill the host's disk.
    assert engine.volumes["ep-shared"] == "64m"
    # The proxy's files (written by harness-probe alone, before it starts) are on disk: they need no holder.
    assert "ep-files" in engine.volumes and engine.volumes["ep-files"] is None
    assert engine.volumes["ep-p0"] == "96m" and engine.volumes["ep-w0"] == "512m"
    # The holder: idle, no network, read-only, every in-memory volume mounted read-only.
    assert [*(holder.entrypoint or []), *(holder.command or [])] == HOLDER_COMMAND
    assert holder.network == "none" and holder.read_only and holder.image == "proxy:1"
    assert {v: m["mode"] for v, m in holder.volumes.items()} == dict.fromkeys(in_memory, "ro")
    assert all(m["bind"].startswith(f"{HELD_DIR}/") for m in holder.volumes.values())
    # The proxy: a read-only root, its witness folder in memory, its files on disk, the harness's volumes not at all.
    assert proxy.read_only and "/tmp" in proxy.tmpfs
    binds: dict[str, Any] = {m["bind"]: (v, m["mode"]) for v, m in proxy.volumes.items()}
    assert binds == {
        "/probe/markers": ("ep-shared", "ro"),
        "/probe/witness": ("ep-p0", "rw"),
        "/probe/scenario": ("ep-files", "rw"),
    }
    assert harness.read_only and {m["bind"] for m in harness.volumes.values()} == {"/probe/markers", "/home/probe"}
    # Held before the harness's files are copied into its in-memory volume (at its creation), and removed only after
    # the proxy and the harness.
    log = engine.log
    assert log.index("start ep-holder") < log.index("create ep-harness")
    assert log.index("remove ep-holder") > log.index("remove ep-proxy") > log.index("remove ep-harness")


def test_a_pod_with_no_other_writable_path_still_holds_the_markers_folder() -> None:
    engine = RecordingEngine()
    spec = _spec()
    spec.writable, spec.proxy_writable, spec.proxy.files = {}, {}, {}
    with docker_pod(cast(Engine, engine), spec):
        pass
    assert set(engine.containers["ep-holder"].volumes) == {"ep-shared"}
    assert engine.containers["ep-proxy"].read_only


def test_a_holder_that_fails_to_start_fails_the_pod_before_the_harness_exists_and_is_removed() -> None:
    """The holder starts in a thread of its own: what it raises is the pod's error, raised before the harness is
    created, and whatever it created is still removed with the rest."""

    class BrokenHolder(RecordingEngine):
        @contextmanager
        def container(self, spec: ContainerSpec) -> Iterator[_Container]:
            with super().container(spec) as c:
                if spec.name.endswith("-holder"):

                    def start() -> None:
                        raise RuntimeError("engine refused to start the holder")

                    c.start = start  # type: ignore[method-assign]
                yield c

    engine = BrokenHolder()
    try:
        with docker_pod(cast(Engine, engine), _spec()):
            raise AssertionError("the pod was handed out")
    except RuntimeError as exc:
        assert "refused to start the holder" in str(exc)
    assert "create ep-harness" not in engine.log
    assert {"remove ep-holder", "remove ep-proxy", "remove volume ep-p0", "remove volume ep-files"} <= set(engine.log)


def test_on_an_engine_whose_in_memory_volumes_take_no_size_the_markers_folder_stays_on_disk() -> None:
    engine = RecordingEngine(sized_tmpfs=False)  # Podman: an in-memory volume there would hold no cap
    with docker_pod(cast(Engine, engine), _spec()):
        pass
    assert engine.volumes["ep-shared"] is None
    assert "ep-shared" not in engine.containers["ep-holder"].volumes
