"""A run: build what is needed, then the harness x scenario episodes (a shard of them, N at once), then the verdict;
stopped by Ctrl-C or SIGTERM once its episodes have begun, the partial verdict of what it got through."""

from __future__ import annotations

import hashlib
import importlib
import secrets
import shlex
import sys
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import structlog

from orchestrator import __version__
from orchestrator.ahead import PodsAhead
from orchestrator.episode import EpisodeImages, EpisodePlan, plan_episode, play_episode
from orchestrator.errors import EXIT_ERROR, OutputExists
from orchestrator.evidence.validate import SCHEMA_DIR, validate
from orchestrator.harnesses import Harness
from orchestrator.harnesses.isolated import start_server
from orchestrator.images import ArchiveImages, BuildError, BuildOptions, BuiltImage, ImageBuilder, ImageVariant
from orchestrator.output import make_output, now_iso, write_json
from orchestrator.parallel import long_first, run_pool, shard_slice
from orchestrator.paths import EpisodePaths, RunPaths
from orchestrator.resources import input_key, scenario_schema_path
from orchestrator.runtime import (
    Engine,
    EngineAPIError,
    ImageNotFound,
    PodRuntime,
    deferred_interrupts,
    received_signal,
)
from orchestrator.runtime.collect import CollectLimits
from orchestrator.scenarios import Scenario, list_scenarios
from orchestrator.stop import RunInterrupted, SuiteResult, cut_short, drop_unplayed, partial_run
from orchestrator.tempdirs import sweep_tempdirs
from orchestrator.versions import image_version, shown_version

log = structlog.get_logger(__name__)

__all__ = ["EXIT_ERROR", "OutputExists", "RunConfig", "RunInterrupted", "SuiteResult", "run_suite"]

# A version command that never ends is killed after this long (or the episode timeout, if shorter).
VERSION_TIMEOUT_SECONDS = 60.0
PROXY_WRITABLE = {"/home/probe": "64m", "/tmp": "64m"}


@dataclass
class RunConfig:
    harnesses: list[Harness]
    scenarios: list[Scenario]
    output: Path
    timeout: float = 300.0
    build: BuildOptions = field(default_factory=BuildOptions)
    collect: CollectLimits = field(default_factory=CollectLimits)
    jobs: int = 1  # episodes at once
    shard: tuple[int, int] | None = None  # (I, N): only the I-th of N slices of the harness x scenario grid
    # Harness name -> (its image built from other inputs than the pin, what runtime.json records of it).
    variants: dict[str, tuple[ImageVariant, dict[str, Any]]] = field(default_factory=dict)
    # Play each episode once more with the harness's transport switched, into twin/ (orchestrator/twin.py).
    compare_stream: bool = False


def new_run_id() -> str:
    return f"{datetime.now(UTC):%Y%m%dT%H%M%S}-{secrets.token_hex(3)}"


def _inputs(scenarios: list[Scenario], built: dict[str, BuiltImage]) -> dict[str, str]:
    inputs = {input_key(s.path): s.sha256 for s in scenarios}
    for schema in [*sorted(SCHEMA_DIR.glob("*.json")), scenario_schema_path()]:
        inputs[input_key(schema)] = hashlib.sha256(schema.read_bytes()).hexdigest()
    for name, img in built.items():
        for rel, digest in img.files.items():
            key = rel if rel.startswith("proxy_addons/") else f"images/{name}/{rel}"
            inputs[key] = digest
    return dict(sorted(inputs.items()))


def _image_key(h: Harness, variants: dict[str, tuple[ImageVariant, dict[str, Any]]]) -> str:
    # A variant is recorded beside the pin's image name, never in its place (both may be built in one run).
    return f"{h.image}@{variants[h.name][0].key}" if h.name in variants else h.image


def _build_harness(
    builder: ImageBuilder | ArchiveImages, h: Harness, variants: dict[str, tuple[ImageVariant, dict[str, Any]]]
) -> BuiltImage:
    prebuilt = getattr(h, "prebuilt_image", lambda: None)()
    if isinstance(prebuilt, str):
        return _prebuilt(builder, prebuilt)
    if h.name not in variants:
        return builder.build(h.image)
    if not isinstance(builder, ImageBuilder):
        raise BuildError(f"{h.name}: a --harness-version/--harness-source image is built here, not taken from archives")
    return builder.build(h.image, variants[h.name][0])


def _prebuilt(builder: ImageBuilder | ArchiveImages, tag: str) -> BuiltImage:
    # An image the engine already holds (the generic ATIF harness's `image`): used as is, recorded by its id.
    if not isinstance(builder, ImageBuilder):
        return builder.build(tag)
    try:
        found = builder.engine.client.images.get(tag)
    except ImageNotFound:
        raise BuildError(
            f"image {tag!r} is no image folder of harness-probe and the engine holds no such image"
        ) from None
    except EngineAPIError as exc:
        raise BuildError(f"image {tag!r}: the engine refused to look it up: {exc}") from None
    return BuiltImage(tag, tag, str(found.id), str(found.id).removeprefix("sha256:"), {}, False, 0.0)


def _suite_harness(h: Harness, variants: dict[str, tuple[ImageVariant, dict[str, Any]]]) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": h.name, "options": h.options}
    if h.name in variants:
        entry["override"] = variants[h.name][1]
    return entry


def _builder(engine: PodRuntime, cfg: RunConfig, on_line: Callable[[str], None] | None) -> ImageBuilder:
    if not isinstance(engine, Engine):
        raise BuildError(f"the {engine.name} runtime cannot build images: give it exported image archives")
    return ImageBuilder(engine, cfg.build, on_line=on_line)


# What only runs once a harness has ended (checks, reports): imported while the first pod starts, not before it.
LATER_MODULES = ("orchestrator.verdict", "orchestrator.report")


def import_ahead() -> threading.Thread:
    """Import LATER_MODULES in a thread: the pod's start is mostly waiting (the proxy's start-up, engine calls),
    and a failed import here is raised again, where the module is used."""

    def load() -> None:
        for name in LATER_MODULES:
            try:
                importlib.import_module(name)
            except Exception as exc:  # pragma: no cover - the import where it is used reports it
                log.debug("import ahead failed", module=name, error=str(exc)[:300])

    thread = threading.Thread(target=load, name="import-ahead", daemon=True)
    thread.start()
    return thread


def _episode_crashed(paths: EpisodePaths, harness: str, scenario: str, run_id: str, exc: Exception) -> dict[str, Any]:
    from orchestrator.verdict import result_skeleton

    paths.root.mkdir(parents=True, exist_ok=True)
    (paths.root / "episode-error.txt").write_text(traceback.format_exc())
    log.error("episode crashed", harness=harness, scenario=scenario, error=f"{type(exc).__name__}: {exc}"[:500])
    execution = {"status": "error", "exit_code": None, "seconds": 0.0, "timeout_seconds": 0.0}
    execution["error"] = f"episode crashed: {type(exc).__name__}: {str(exc)[:500]}"
    result = result_skeleton(harness, scenario, run_id, f"hp-{run_id}-crashed", now_iso(), execution)
    result["finished_at"] = now_iso()
    write_json(paths.result, result)
    return result


def run_suite(
    cfg: RunConfig,
    engine: PodRuntime,
    on_build_line: Callable[[str], None] | None = None,
    on_episode: Callable[[str, str, dict[str, Any] | None], None] | None = None,
    on_harness_ended: Callable[[str, str], None] | None = None,
) -> SuiteResult:
    out = RunPaths(cfg.output)
    make_output(cfg.output)
    run_id = new_run_id()
    engine.sweep()
    # A killed run's temporary folders on this machine (normalizer output), whatever runtime it used.
    if swept := sweep_tempdirs():
        log.info("removed the temporary folders of runs that no longer exist", folders=swept)
    try:
        return _run(cfg, engine, out, run_id, on_build_line, on_episode, on_harness_ended)
    except BaseException as stopped:
        # Whatever was interrupted mid-creation: nothing labelled with this run survives it. A clean-up that fails
        # is told with its remedy and never replaces what stopped the run (Ctrl-C still exits 130).
        with deferred_interrupts():
            try:
                engine.cleanup(run_id)
            except Exception as exc:
                if isinstance(stopped, RunInterrupted):
                    stopped.cleaned = False
                log.error(
                    "the run's containers could not all be removed",
                    error=f"{type(exc).__name__}: {exc}"[:1000],
                    remedy=f"harness-probe cleanup --run-id {run_id}",
                )
        raise


def _run(
    cfg: RunConfig,
    engine: PodRuntime,
    out: RunPaths,
    run_id: str,
    on_build_line: Callable[[str], None] | None,
    on_episode: Callable[[str, str, dict[str, Any] | None], None] | None,
    on_harness_ended: Callable[[str, str], None] | None,
) -> SuiteResult:
    version_timeout = min(VERSION_TIMEOUT_SECONDS, cfg.timeout)
    # The normalizers' server imports while images are looked up and the first pod starts.
    start_server()
    # A runtime that builds images (Docker, Podman) builds them here; one that cannot (Apptainer) takes them from
    # the archives `images export` wrote, by the same content-hash tags.
    builder: ImageBuilder | ArchiveImages = (
        ArchiveImages(engine.image_archives)
        if engine.image_archives is not None
        else _builder(engine, cfg, on_build_line)
    )
    built: dict[str, BuiltImage] = {"proxy": builder.build("proxy")}
    harness_images: dict[str, BuiltImage] = {}
    for h in cfg.harnesses:
        harness_images[h.name] = _build_harness(builder, h, cfg.variants)
        built[_image_key(h, cfg.variants)] = harness_images[h.name]
    # `mitmdump --version` prints several lines (platform, OpenSSL, ...); the first names mitmproxy.
    proxy_text = (
        image_version(
            engine,
            built["proxy"],
            ("/opt/mitmproxy/bin/mitmdump", "--version"),
            run_id,
            PROXY_WRITABLE,
            version_timeout,
        )
        or ""
    )
    proxy_version = shown_version(next((ln for ln in proxy_text.splitlines() if "mitmproxy" in ln.lower()), None))
    started_at = now_iso()
    suite: dict[str, Any] = {
        "schema": "suite/v1",
        "run_id": run_id,
        "started_at": started_at,
        "tool_version": __version__,
        "command": shlex.join(["harness-probe", *sys.argv[1:]]),
        "harnesses": [_suite_harness(h, cfg.variants) for h in cfg.harnesses],
        "scenarios": [{"name": s.name, "sha256": s.sha256} for s in cfg.scenarios],
        "images": {
            n: {"tag": i.tag, "image_id": i.image_id, "inputs_sha256": i.inputs_sha256} for n, i in built.items()
        },
        "inputs": _inputs(cfg.scenarios, built),
        "timeout_seconds": cfg.timeout,
    }
    grid = [(h, sc) for h in cfg.harnesses for sc in cfg.scenarios]
    if cfg.shard:
        grid = shard_slice(grid, *cfg.shard)
        suite["shard"] = {"index": cfg.shard[0], "count": cfg.shard[1]}
        suite["episodes"] = [{"harness": h.name, "scenario": sc.name} for h, sc in grid]
    validate(suite, "suite/v1", "suite.json")
    write_json(out.suite, suite)
    # From here on a stop leaves partial results: every episode started, finished or cut short, in the grid's order.
    done: dict[int, dict[str, Any]] = {}
    try:
        return _episodes(cfg, engine, out, run_id, suite, harness_images, built, proxy_version, grid, done, started_at,
                         on_episode, on_harness_ended)  # fmt: skip
    except KeyboardInterrupt:
        raise _stopped(cfg, out, run_id, suite, grid, done, started_at) from None


def _stopped(
    cfg: RunConfig,
    out: RunPaths,
    run_id: str,
    suite: dict[str, Any],
    grid: list[tuple[Harness, Scenario]],
    done: dict[int, dict[str, Any]],
    started_at: str,
) -> RunInterrupted:
    """A stop once the episodes began: what never began leaves nothing, the partial reports are written."""
    drop_unplayed([out.episode(h.name, sc.name).root for i, (h, sc) in enumerate(grid) if i not in done])
    results = [done[i] for i in range(len(grid)) if i in done]
    return partial_run(run_id, cfg.output, suite, results, len(grid), _full_suite(cfg), started_at)


def _full_suite(cfg: RunConfig) -> bool:
    return {s.name for s in cfg.scenarios} >= {s.name for s in list_scenarios()}


def _episodes(
    cfg: RunConfig,
    engine: PodRuntime,
    out: RunPaths,
    run_id: str,
    suite: dict[str, Any],
    harness_images: dict[str, BuiltImage],
    built: dict[str, BuiltImage],
    proxy_version: str | None,
    grid: list[tuple[Harness, Scenario]],
    done: dict[int, dict[str, Any]],
    started_at: str,
    on_episode: Callable[[str, str, dict[str, Any] | None], None] | None,
    on_harness_ended: Callable[[str, str], None] | None,
) -> SuiteResult:
    """The version probes and every episode, then the reports; each episode's result lands in `done` as it ends."""
    version_timeout = min(VERSION_TIMEOUT_SECONDS, cfg.timeout)
    # Every version probe before the first episode, so episodes running side by side share one answer.
    images: dict[str, EpisodeImages] = {}
    for h in cfg.harnesses:
        image = harness_images[h.name]
        text = image_version(engine, image, h.version_argv(), run_id, dict(h.writable_paths), version_timeout)
        version = shown_version(h.parse_version(text or ""))
        override = cfg.variants[h.name][1] if h.name in cfg.variants else None
        images[h.name] = EpisodeImages(built["proxy"], proxy_version, image, version, override)
    if cfg.variants:
        # Each overridden pin with the version its image itself answered, so the reports can say what ran.
        for entry in suite["harnesses"]:
            if "override" in entry:
                entry["override"] = {**entry["override"], "ran": images[entry["name"]].harness_version}
                images[entry["name"]] = replace(images[entry["name"]], harness_override=entry["override"])
        validate(suite, "suite/v1", "suite.json")
        write_json(out.suite, suite)

    # Each episode's plan (its folder, scenario and runtime.json, its pod's spec), made when it begins or when its
    # pod is set up ahead, while the episode before it runs its harness.
    planners = [
        partial(plan_episode, engine, h, sc, images[h.name], out.episode(h.name, sc.name), run_id, cfg.timeout)
        for h, sc in grid
    ]

    # Set the moment a stop is seen, before its clean-up kills the running harnesses: an episode that returns once it
    # is set was cut short, whatever its evidence now says.
    stopping = threading.Event()

    def episode(index: int, free: Callable[[], None]) -> dict[str, Any]:
        h, sc = grid[index]
        if on_episode:
            on_episode(h.name, sc.name, None)
        log.info("episode", harness=h.name, scenario=sc.name, run_id=run_id)
        paths = out.episode(h.name, sc.name)
        plan: EpisodePlan | None = None

        def ended() -> None:
            free()
            if on_harness_ended:
                on_harness_ended(h.name, sc.name)

        try:
            plan, ready = ahead.begin(index)
            result = play_episode(engine, plan, cfg.collect, ready, on_started=ahead.set_up_next, on_ended=ended)
            if cfg.compare_stream and not stopping.is_set():
                from orchestrator.twin import play_twin

                result = play_twin(engine, h, sc, images[h.name], paths, run_id, cfg.timeout, cfg.collect, result)
        except KeyboardInterrupt:  # --jobs 1: the stop lands here, in the episode's own thread
            stopping.set()
            with deferred_interrupts():
                done[index] = cut_short(paths, h.name, sc.name, run_id, plan)
                if on_episode:
                    on_episode(h.name, sc.name, done[index])
            raise
        except Exception as exc:  # one episode never takes the run down: it is that episode's error
            result = _episode_crashed(paths, h.name, sc.name, run_id, exc)
        # It ran on past the stop (--jobs N): its harness was killed by the stop's clean-up.
        if stopping.is_set() and result["verdict"] != "skipped":
            from orchestrator.verdict import interrupted_result

            result = interrupted_result(result, received_signal())
            write_json(paths.result, result)
        done[index] = result
        if on_episode:
            on_episode(h.name, sc.name, result)
        return result

    # With --jobs 1 episodes run in grid order; side by side, the scenarios with a harness deadline (they may run
    # until the harness gives up) start first. Results, reports and shards keep the grid's order either way.
    order = long_first(grid, lambda e: e[1].harness_deadline is not None) if cfg.jobs > 1 else None
    import_ahead()
    with PodsAhead(engine, planners, order) as ahead:
        results = run_pool(range(len(grid)), episode, cfg.jobs, cleanup=lambda: engine.cleanup(run_id), order=order,
                           on_stop=stopping.set)  # fmt: skip
    # Reports once every episode has finished; summary.json last.
    from orchestrator.report import report_run

    code = report_run(
        cfg.output, suite, results, full_suite=_full_suite(cfg), started_at=started_at, finished_at=now_iso()
    )
    return SuiteResult(run_id, cfg.output, results, code)
