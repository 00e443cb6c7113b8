"""A run: build what is needed, then every harness x scenario episode in turn, then the verdict and exit code."""

from __future__ import annotations

import hashlib
import secrets
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import docker.errors
import structlog

from orchestrator import __version__
from orchestrator.episode import EpisodeImages, now_iso, run_episode, write_json
from orchestrator.evidence.validate import SCHEMA_DIR, validate
from orchestrator.harnesses import Harness
from orchestrator.images import REPO_ROOT, BuildOptions, BuiltImage, ImageBuilder
from orchestrator.paths import RunPaths
from orchestrator.report import report_run
from orchestrator.runtime import Engine, create_labels
from orchestrator.scenarios import Scenario, list_scenarios

log = structlog.get_logger(__name__)

__all__ = ["EXIT_ERROR", "OutputExists", "RunConfig", "SuiteResult", "run_suite"]

EXIT_ERROR = 2


class OutputExists(FileExistsError):
    """Results are never overwritten or mixed: an existing output directory is refused."""


@dataclass
class RunConfig:
    harnesses: list[Harness]
    scenarios: list[Scenario]
    output: Path
    timeout: float = 300.0
    build: BuildOptions = field(default_factory=BuildOptions)


@dataclass
class SuiteResult:
    run_id: str
    output: Path
    results: list[dict[str, Any]]
    exit_code: int  # decided by the summary: 0 every P0 gate passes, 1 a check failed, 2 an error


def new_run_id() -> str:
    return f"{datetime.now(UTC):%Y%m%dT%H%M%S}-{secrets.token_hex(3)}"


def _version(engine: Engine, image: BuiltImage, command: tuple[str, ...], run_id: str) -> str | None:
    """The image's own version string, asked with no network at all."""
    if not command:
        return None
    try:
        out = engine.client.containers.run(
            image.tag,
            list(command),
            entrypoint=[],
            network_disabled=True,
            remove=True,
            labels=create_labels(run_id, role="version"),
            stdout=True,
            stderr=True,
        )
    except docker.errors.DockerException as exc:
        log.warning("could not read version", image=image.tag, error=str(exc))
        return None
    text = out.decode(errors="replace").strip() if isinstance(out, bytes) else str(out).strip()
    return text or None


def _input_name(path: Path) -> str:
    """A scenario file by its repository path; one given by path from outside the repository by its absolute path."""
    full = path.resolve()
    return str(full.relative_to(REPO_ROOT)) if full.is_relative_to(REPO_ROOT) else str(full)


def _inputs(scenarios: list[Scenario], built: dict[str, BuiltImage]) -> dict[str, str]:
    inputs = {_input_name(s.path): s.sha256 for s in scenarios}
    for schema in [*sorted(SCHEMA_DIR.glob("*.json")), REPO_ROOT / "scenarios" / "scenario.schema.json"]:
        inputs[str(schema.relative_to(REPO_ROOT))] = hashlib.sha256(schema.read_bytes()).hexdigest()
    for name, img in built.items():
        for rel, digest in img.files.items():
            key = rel if rel.startswith("proxy_addons/") else f"images/{name}/{rel}"
            inputs[key] = digest
    return dict(sorted(inputs.items()))


def run_suite(
    cfg: RunConfig,
    engine: Engine,
    on_build_line: Callable[[str], None] | None = None,
    on_episode: Callable[[str, str, dict[str, Any] | None], None] | None = None,
) -> SuiteResult:
    out = RunPaths(cfg.output)
    if cfg.output.exists():
        raise OutputExists(f"output directory {cfg.output} already exists; choose a new one (results are never mixed)")
    cfg.output.mkdir(parents=True)
    run_id = new_run_id()
    builder = ImageBuilder(engine, cfg.build, on_line=on_build_line)
    built: dict[str, BuiltImage] = {"proxy": builder.build("proxy")}
    for h in cfg.harnesses:
        built[h.image] = builder.build(h.image)
    # `mitmdump --version` prints several lines (platform, OpenSSL, ...); the first names mitmproxy.
    proxy_text = _version(engine, built["proxy"], ("/opt/mitmproxy/bin/mitmdump", "--version"), run_id) or ""
    proxy_version = next((ln.strip() for ln in proxy_text.splitlines() if "mitmproxy" in ln.lower()), None)
    started_at = now_iso()
    suite: dict[str, Any] = {
        "schema": "suite/v1",
        "run_id": run_id,
        "started_at": started_at,
        "tool_version": __version__,
        "command": shlex.join(["harness-probe", *sys.argv[1:]]),
        "harnesses": [{"name": h.name, "options": h.options} for h in cfg.harnesses],
        "scenarios": [{"name": s.name, "sha256": s.sha256} for s in cfg.scenarios],
        "images": {
            n: {"tag": i.tag, "image_id": i.image_id, "inputs_sha256": i.inputs_sha256} for n, i in built.items()
        },
        "inputs": _inputs(cfg.scenarios, built),
        "timeout_seconds": cfg.timeout,
    }
    validate(suite, "suite/v1", "suite.json")
    write_json(out.suite, suite)
    results: list[dict[str, Any]] = []
    for h in cfg.harnesses:
        version = h.parse_version(_version(engine, built[h.image], h.version_command, run_id) or "") or None
        images = EpisodeImages(built["proxy"], proxy_version, built[h.image], version)
        for s in cfg.scenarios:
            if on_episode:
                on_episode(h.name, s.name, None)
            log.info("episode", harness=h.name, scenario=s.name, run_id=run_id)
            result = run_episode(engine, h, s, images, out.episode(h.name, s.name), run_id, cfg.timeout)
            results.append(result)
            if on_episode:
                on_episode(h.name, s.name, result)
    # Reports only once every episode has finished; summary.json last, so an interrupted run has none.
    full_suite = {s.name for s in cfg.scenarios} >= {s.name for s in list_scenarios()}
    code = report_run(cfg.output, suite, results, full_suite=full_suite, started_at=started_at, finished_at=now_iso())
    return SuiteResult(run_id, cfg.output, results, code)
