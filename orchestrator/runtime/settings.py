"""What a command was told about runtimes (flags and environment), read once at the CLI edge and passed down."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["RuntimeSettings"]


_APPTAINER_WORK = f"harness-probe-apptainer-{os.getuid()}"


@dataclass(frozen=True)
class RuntimeSettings:
    """Everything below the CLI knows about where runtimes are; nothing under orchestrator/runtime/ reads os.environ.

    runtime / runtime_from: the runtime named by `--runtime` or HARNESS_PROBE_RUNTIME, and which of them named it.
    docker_env: the DOCKER_* variables (DOCKER_HOST, DOCKER_TLS_VERIFY, DOCKER_CERT_PATH) the docker SDK reads.
    """

    runtime: str | None = None
    runtime_from: str | None = None
    docker_env: Mapping[str, str] = field(default_factory=dict)
    container_host: str | None = None
    xdg_runtime_dir: str | None = None
    home: Path = field(default_factory=Path.home)
    image_archives: Path | None = None
    sif_cache: Path = field(default_factory=lambda: Path.home() / ".cache" / "harness-probe" / "sif")
    # One per user, and used only when it is that user's alone (apptainer_guard.private_folder): a shared temp
    # folder another user made could hold a swapped witness.
    apptainer_work: Path = field(default_factory=lambda: Path(tempfile.gettempdir()) / _APPTAINER_WORK)
    # HARNESS_PROBE_APPTAINER_CGROUPS=1: cgroups v2 are delegated to this user, so Apptainer can apply limits.
    apptainer_cgroups: bool = False

    @property
    def docker_host(self) -> str | None:
        return self.docker_env.get("DOCKER_HOST") or None

    def as_environ(self) -> dict[str, str]:
        """The variables a discovery probe (doctor) would have read, as the settings hold them."""
        env = {k: v for k, v in self.docker_env.items() if v}
        if self.container_host:
            env["CONTAINER_HOST"] = self.container_host
        if self.xdg_runtime_dir:
            env["XDG_RUNTIME_DIR"] = self.xdg_runtime_dir
        env["HOME"] = str(self.home)
        return env

    @classmethod
    def from_environ(
        cls,
        env: Mapping[str, str],
        runtime: str | None = None,
        image_archives: Path | None = None,
        runtime_flag: str = "--runtime",
    ) -> RuntimeSettings:
        """`env` is the CLI's os.environ (or a test's); `runtime` the --runtime value (typer also fills it from
        HARNESS_PROBE_RUNTIME, so the environment is asked which of the two named it)."""
        named_by = None
        if runtime:
            from_env = env.get("HARNESS_PROBE_RUNTIME") == runtime
            named_by = f"HARNESS_PROBE_RUNTIME={runtime}" if from_env else f"{runtime_flag} {runtime}"
        elif env.get("HARNESS_PROBE_RUNTIME"):
            runtime = env["HARNESS_PROBE_RUNTIME"]
            named_by = f"HARNESS_PROBE_RUNTIME={runtime}"
        archives = image_archives
        if archives is None and env.get("HARNESS_PROBE_IMAGE_ARCHIVES"):
            archives = Path(env["HARNESS_PROBE_IMAGE_ARCHIVES"])
        home = Path(env["HOME"]) if env.get("HOME") else Path.home()
        cache = Path(env.get("XDG_CACHE_HOME") or home / ".cache") / "harness-probe" / "sif"
        work = Path(tempfile.gettempdir()) / _APPTAINER_WORK
        return cls(
            runtime=runtime or None,
            runtime_from=named_by,
            docker_env={k: v for k, v in env.items() if k.startswith("DOCKER_") and v},
            container_host=env.get("CONTAINER_HOST") or None,
            xdg_runtime_dir=env.get("XDG_RUNTIME_DIR") or None,
            home=home,
            image_archives=archives,
            sif_cache=Path(env.get("HARNESS_PROBE_SIF_CACHE") or cache),
            apptainer_work=Path(env.get("HARNESS_PROBE_APPTAINER_WORK") or work),
            apptainer_cgroups=env.get("HARNESS_PROBE_APPTAINER_CGROUPS") == "1",
        )
