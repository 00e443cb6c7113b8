"""Which runtime a command uses, by registry: a named one (--runtime, HARNESS_PROBE_RUNTIME, DOCKER_HOST,
CONTAINER_HOST) or nothing else; with none named, the first of FALLBACK that answers. `run` and `doctor` both
decide here, from RuntimeSettings the CLI read, so they cannot disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import structlog

from orchestrator.errors import CleanupIncomplete, EngineUnavailable, UnknownRuntime
from orchestrator.runtime.apptainer import ApptainerRuntime, ApptainerUnavailable
from orchestrator.runtime.apptainer_pods import cleanup_apptainer_pods
from orchestrator.runtime.discover import ORDER, RuntimeStatus, candidate_docker_sockets
from orchestrator.runtime.docker import Engine
from orchestrator.runtime.pod import PodRuntime
from orchestrator.runtime.podman import PodmanEngine
from orchestrator.runtime.settings import RuntimeSettings

log = structlog.get_logger(__name__)

__all__ = [
    "BACKENDS",
    "FALLBACK",
    "RUNTIMES",
    "Named",
    "RuntimeSettings",
    "Selected",
    "cleanup_everywhere",
    "decide",
    "named_runtime",
    "open_engine",
    "open_named",
]

RUNTIMES = ORDER
# Tried in turn only when nothing names a runtime. Apptainer is never a fallback: it needs image archives.
FALLBACK = ("docker", "podman")


DEFAULT_DOCKER_SOCKET = "unix:///var/run/docker.sock"


def _docker(settings: RuntimeSettings) -> PodRuntime:
    if settings.docker_host:
        return Engine.connect(docker_env=settings.docker_env)
    # The sockets `doctor` looks at, in its order (root, rootless, Lima, Colima): the first that answers is the one
    # doctor reports, so the two agree. Docker's default socket is recorded as no address (None).
    reasons = []
    for url in candidate_docker_sockets(settings.as_environ(), settings.home) or [DEFAULT_DOCKER_SOCKET]:
        env = {**settings.docker_env, "DOCKER_HOST": url} if url != DEFAULT_DOCKER_SOCKET else settings.docker_env
        try:
            return Engine.connect(docker_env=env)
        except EngineUnavailable as exc:
            reasons.append(str(exc))
    raise EngineUnavailable(" / ".join(reasons))


def _podman(settings: RuntimeSettings) -> PodRuntime:
    return PodmanEngine.connect_socket(container_host=settings.container_host, xdg_runtime_dir=settings.xdg_runtime_dir)


def _apptainer(settings: RuntimeSettings) -> PodRuntime:
    try:
        return ApptainerRuntime(
            settings.sif_cache, settings.apptainer_work, settings.image_archives, cgroups=settings.apptainer_cgroups
        )
    except ApptainerUnavailable as exc:
        raise EngineUnavailable(str(exc)) from None


BACKENDS: dict[str, Callable[[RuntimeSettings], PodRuntime]] = {
    "docker": _docker,
    "podman": _podman,
    "apptainer": _apptainer,
}


@dataclass(frozen=True)
class Named:
    """A runtime the user named, and what named it (`--runtime podman`, `DOCKER_HOST=unix:///...`)."""

    name: str
    named_by: str


@dataclass(frozen=True)
class Selected:
    runtime: PodRuntime
    named_by: str | None  # None: taken from FALLBACK, the first that answered

    @property
    def why(self) -> str:
        return f"named by {self.named_by}" if self.named_by else f"first that answers of {', '.join(FALLBACK)}"


def named_runtime(settings: RuntimeSettings) -> Named | None:
    """The runtime the settings name, if any: --runtime / HARNESS_PROBE_RUNTIME, else DOCKER_HOST (docker), else
    CONTAINER_HOST (podman). An unknown name is an UnknownRuntime listing the known ones."""
    if settings.runtime:
        if settings.runtime not in BACKENDS:
            known = ", ".join(BACKENDS)
            raise UnknownRuntime(f"unknown runtime {settings.runtime!r} ({settings.runtime_from}; one of: {known})")
        return Named(settings.runtime, settings.runtime_from or f"--runtime {settings.runtime}")
    if settings.docker_host:
        return Named("docker", f"DOCKER_HOST={settings.docker_host}")
    if settings.container_host:
        return Named("podman", f"CONTAINER_HOST={settings.container_host}")
    return None


def open_named(name: str, settings: RuntimeSettings) -> PodRuntime:
    """One runtime by name, with no fallback; EngineUnavailable says why not."""
    if name not in BACKENDS:
        raise UnknownRuntime(f"unknown runtime {name!r} (one of: {', '.join(BACKENDS)})")
    return BACKENDS[name](settings)


def open_engine(settings: RuntimeSettings) -> Selected:
    """The runtime a command uses: the named one or an error (never a silent fallback), else the first of FALLBACK
    that answers. The choice is logged; runtime.json records it per episode."""
    named = named_runtime(settings)
    if named is not None:
        try:
            runtime = open_named(named.name, settings)
        except EngineUnavailable as exc:
            raise EngineUnavailable(
                f"{named.name} was named by {named.named_by} and does not answer (no other runtime is tried when "
                f"one is named): {str(exc).strip()}"
            ) from None
        chosen = Selected(runtime, named.named_by)
    else:
        reasons = []
        for candidate in FALLBACK:
            try:
                chosen = Selected(open_named(candidate, settings), None)
                break
            except EngineUnavailable as exc:
                reasons.append(f"{candidate}: {exc}")
        else:
            raise EngineUnavailable("no container runtime answers.\n" + "\n".join(reasons))
    log.info("runtime selected", runtime=chosen.runtime.name, why=chosen.why)
    return chosen


def decide(settings: RuntimeSettings, statuses: Sequence[RuntimeStatus]) -> tuple[RuntimeStatus | None, str]:
    """What `open_engine` would take, judged from discovery (doctor): the status and why, or None and why not."""
    by_name = {s.name: s for s in statuses}
    named = named_runtime(settings)
    if named is not None:
        status = by_name.get(named.name)
        if status is not None and status.answers:
            return status, f"named by {named.named_by}"
        return None, f"{named.name} was named by {named.named_by} and does not answer"
    for candidate in FALLBACK:
        status = by_name.get(candidate)
        if status is not None and status.answers:
            return status, f"first that answers of {', '.join(FALLBACK)}"
    return None, f"none of {', '.join(FALLBACK)} answers"


def cleanup_everywhere(
    names: list[str],
    run_id: str | None,
    settings: RuntimeSettings | None = None,
    spared: dict[str, str] | None = None,
) -> dict[str, dict[str, int] | str | CleanupIncomplete]:
    """Each runtime's cleanup: its counts; the reason it does not answer (never an error); or what it could not
    remove, after every other runtime was cleaned up. With `spared`, runs whose owner may be alive are left."""
    settings = settings or RuntimeSettings()
    out: dict[str, dict[str, int] | str | CleanupIncomplete] = {}
    for name in names:
        if name == "apptainer":
            out[name] = cleanup_apptainer_pods(settings.apptainer_work, run_id, spared)
            continue
        try:
            engine = open_named(name, settings)
        except EngineUnavailable as exc:
            out[name] = str(exc).splitlines()[0]
            continue
        try:
            out[name] = engine.cleanup(run_id, spared)
        except CleanupIncomplete as exc:
            out[name] = exc
    return out
