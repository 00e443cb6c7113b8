"""Which runtime a command uses: `--runtime` / HARNESS_PROBE_RUNTIME, else the first that answers in ORDER."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from orchestrator.runtime.apptainer import ApptainerRuntime, ApptainerUnavailable
from orchestrator.runtime.apptainer_pods import cleanup_apptainer_pods
from orchestrator.runtime.discover import ORDER
from orchestrator.runtime.docker import CleanupIncomplete, Engine, EngineUnavailable
from orchestrator.runtime.pod import PodRuntime
from orchestrator.runtime.podman import PodmanEngine

__all__ = ["RUNTIMES", "apptainer_work_root", "cleanup_everywhere", "open_engine", "sif_cache"]

RUNTIMES = ORDER


def open_engine(name: str | None = None, image_archives: Path | None = None) -> PodRuntime:
    """The engine for `name`; with none, Docker if it answers, else Podman. EngineUnavailable says why not."""
    name = name or os.environ.get("HARNESS_PROBE_RUNTIME") or None
    if name == "docker":
        return Engine.connect()
    if name == "podman":
        return PodmanEngine.connect()
    if name == "apptainer":
        archives = image_archives or os.environ.get("HARNESS_PROBE_IMAGE_ARCHIVES")
        try:
            return ApptainerRuntime(sif_cache(), apptainer_work_root(), Path(archives) if archives else None)
        except ApptainerUnavailable as exc:
            raise EngineUnavailable(str(exc)) from None
    if name is not None:
        raise EngineUnavailable(f"unknown runtime {name!r} (one of: {', '.join(RUNTIMES)})")
    reasons = []
    for candidate in ("docker", "podman"):
        try:
            return open_engine(candidate)
        except EngineUnavailable as exc:
            reasons.append(f"{candidate}: {exc}")
    raise EngineUnavailable("no container runtime answers.\n" + "\n".join(reasons))


def sif_cache() -> Path:
    """SIF files by content hash; a shared filesystem here lets a cluster's nodes share them."""
    default = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "harness-probe" / "sif"
    return Path(os.environ.get("HARNESS_PROBE_SIF_CACHE") or default)


def apptainer_work_root() -> Path:
    """Where the Apptainer backend keeps its pods' work directories (one per pod, removed when the pod ends)."""
    return Path(
        os.environ.get("HARNESS_PROBE_APPTAINER_WORK") or Path(tempfile.gettempdir()) / "harness-probe-apptainer"
    )


def cleanup_everywhere(names: list[str], run_id: str | None) -> dict[str, dict[str, int] | str | CleanupIncomplete]:
    """Each runtime's cleanup: its counts; the reason it does not answer (never an error); or what it could not
    remove, after every other runtime was cleaned up."""
    out: dict[str, dict[str, int] | str | CleanupIncomplete] = {}
    for name in names:
        if name == "apptainer":
            out[name] = cleanup_apptainer_pods(apptainer_work_root(), run_id)
            continue
        try:
            engine = open_engine(name)
        except EngineUnavailable as exc:
            out[name] = str(exc).splitlines()[0]
            continue
        try:
            out[name] = engine.cleanup(run_id)
        except CleanupIncomplete as exc:
            out[name] = exc
    return out
