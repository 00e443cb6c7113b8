"""One episode (one harness x one scenario): a loopback-only pod, collection, normalization, checks."""

from __future__ import annotations

import hashlib
import time
import traceback
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import structlog

from orchestrator.evidence import validate
from orchestrator.harnesses import Harness, LaunchContext
from orchestrator.harnesses.isolated import Normalizer
from orchestrator.images import BuiltImage
from orchestrator.output import now_iso, write_json
from orchestrator.paths import EpisodePaths
from orchestrator.resources import build_info
from orchestrator.runtime import ContainerHandle, ContainerSpec, PodRuntime, PodSpec, create_labels
from orchestrator.runtime.collect import Collection, CollectLimits
from orchestrator.runtime.pod import Pod
from orchestrator.scenarios import Scenario

log = structlog.get_logger(__name__)

__all__ = [
    "EpisodeImages",
    "EpisodePlan",
    "PodReady",
    "plan_episode",
    "play_episode",
    "run_episode",
    "set_up_ahead",
]

PROXY_READY = b"DNS server listening at"
PROXY_STOP_SECONDS = 10
PROXY_READY_SECONDS = 60
POD_SETUP_ATTEMPTS = 2
# Per container. CPU is a share of one core: a harness burning CPU cannot starve the proxy or the host.
HARNESS_CPUS, HARNESS_MEMORY, HARNESS_PIDS = 1.0, "2g", 512
PROXY_CPUS, PROXY_MEMORY, PROXY_PIDS = 1.0, "1g", 256
# The proxy's one writable folder, in memory and capped (its root is read-only): the witness, whose bodies stop at
# the proxy's witness budget (32 MiB, proxy_addons/witness.py), plus room for the small events after it (~40,000).
WITNESS_DIR, WITNESS_TMPFS = "/probe/witness", "96m"


@dataclass(frozen=True)
class EpisodeImages:
    proxy: BuiltImage
    proxy_version: str | None
    harness: BuiltImage
    harness_version: str | None
    # Set when the pin was overridden (--harness-version / --harness-source): what ran instead, for runtime.json.
    harness_override: dict[str, Any] | None = None


def _image_json(img: BuiltImage, version: str | None) -> dict[str, Any]:
    return {
        "name": img.name,
        "tag": img.tag,
        "image_id": img.image_id,
        "inputs_sha256": img.inputs_sha256,
        "files": img.files,
        "version": version,
    }


def _asked_limits(spec: PodSpec) -> dict[str, Any]:
    """Written first, so an episode whose pod never started still says what it asked for."""
    harness = spec.harness.limits()
    harness["writable"] = dict(sorted(spec.writable.items()))
    proxy = spec.proxy.limits()
    proxy["writable"] = dict(sorted(spec.proxy_writable.items()))
    return {"proxy": proxy, "harness": harness}


@dataclass
class EpisodePlan:
    """An episode before its pod exists: its folder, the scenario as played, runtime.json and the pod's spec."""

    harness: Harness
    scenario: Scenario
    paths: EpisodePaths
    run_id: str
    episode_id: str
    started: str
    execution: dict[str, Any]
    wait_for: float
    markers: str
    runtime_doc: dict[str, Any]
    pod_spec: PodSpec | None  # None: the episode is skipped


@dataclass
class PodReady:
    """A pod set up before its episode plays (while another harness runs); its stack removes it."""

    stack: ExitStack
    pod: Pod


def run_episode(
    engine: PodRuntime,
    harness: Harness,
    scenario: Scenario,
    images: EpisodeImages,
    paths: EpisodePaths,
    run_id: str,
    timeout: float,
    limits: CollectLimits | None = None,
) -> dict[str, Any]:
    """Run, collect, normalize, check; returns the scenario_result it wrote. Never raises for harness faults."""
    return play_episode(engine, plan_episode(engine, harness, scenario, images, paths, run_id, timeout), limits)


def plan_episode(
    engine: PodRuntime,
    harness: Harness,
    scenario: Scenario,
    images: EpisodeImages,
    paths: EpisodePaths,
    run_id: str,
    timeout: float,
) -> EpisodePlan:
    """The episode's folder with scenario.json and runtime.json (what it asked for), and its pod's spec."""
    paths.root.mkdir(parents=True, exist_ok=False)
    episode_id = f"hp-{run_id}-{uuid.uuid4().hex[:6]}"
    started = now_iso()
    execution: dict[str, Any] = {
        "status": "error",
        "exit_code": None,
        "seconds": 0.0,
        "timeout_seconds": timeout,
        "error": None,
    }
    deadline = scenario.harness_deadline
    if deadline is not None and deadline < timeout:
        execution["deadline_seconds"] = deadline
    wait_for = execution.get("deadline_seconds", timeout)
    plan = EpisodePlan(harness, scenario, paths, run_id, episode_id, started, execution, wait_for, "", {}, None)
    override = scenario.override(harness.name)
    if override and override.get("skip"):
        execution.update(status="skipped", error=override["reason"])
        return plan
    # The scenario as the proxy played it, kept with the evidence so an audit can re-check offline. A harness
    # that must receive its final answer in a form of its own says so in the profile the proxy reads.
    profile = harness.harness_profile()
    played = replace(scenario, data={**scenario.data, "harness_profile": profile}) if profile else scenario
    paths.scenario.write_bytes(played.provider_json())
    # Judged as played: the harness profile sets the checks' scope (text delivery has no tool ids).
    plan.scenario = played
    ctx = LaunchContext(task_id=scenario.name)
    launch = harness.launch(scenario, ctx)
    runtime_doc: dict[str, Any] = {
        "schema": "runtime/v1",
        "tool": build_info().as_json(),
        "engine": engine.describe(),
        "harness": _image_json(images.harness, images.harness_version),
        "proxy": _image_json(images.proxy, images.proxy_version),
        "launch": {
            "command": launch.command,
            "environment": launch.environment,
            "files": {p: hashlib.sha256(d).hexdigest() for p, d in launch.files.items()},
            "options": harness.options,
        },
        "scenario_sha256": scenario.sha256,
    }
    if images.harness_override is not None:
        runtime_doc["harness_override"] = images.harness_override
    labels = create_labels(run_id, episode=episode_id, harness=harness.name, scenario=scenario.name)
    pod_spec = PodSpec(
        name=episode_id,
        labels=labels,
        proxy=ContainerSpec(
            image=images.proxy.tag,
            name=f"{episode_id}-proxy",
            command=[
                "--set",
                "probe_scenario=/probe/scenario/scenario.json",
                "--set",
                "probe_witness=/probe/witness/witness.jsonl",
                "--set",
                f"probe_markers={ctx.markers}",
                # Stopped, it ends once the witness is closed, not after seconds of interpreter finalization.
                "--set",
                "probe_exit_when_done=true",
            ],
            files={"/probe/scenario/scenario.json": played.provider_json()},
            files_base="/probe/scenario",
            labels={**labels, "harness-probe.role": "proxy"},
            mem_limit=PROXY_MEMORY,
            cpus=PROXY_CPUS,
            pids_limit=PROXY_PIDS,
            # The proxy is also the harness's DNS server (E10); port 53 without any capability.
            sysctls={"net.ipv4.ip_unprivileged_port_start": "0"},
        ),
        harness=ContainerSpec(
            image=images.harness.tag,
            name=f"{episode_id}-harness",
            command=launch.command,
            environment={"HOME": ctx.home, **launch.environment},
            user="probe",
            working_dir=ctx.workdir,
            files=launch.files,
            files_base=ctx.home,
            files_owner=(1000, 1000),
            labels={**labels, "harness-probe.role": "harness"},
            mem_limit=HARNESS_MEMORY,
            cpus=HARNESS_CPUS,
            pids_limit=HARNESS_PIDS,
        ),
        shared=ctx.markers,
        writable=dict(harness.writable_paths),
        proxy_writable={WITNESS_DIR: WITNESS_TMPFS},
        ready_log=PROXY_READY,
        ready_timeout=PROXY_READY_SECONDS,
    )
    runtime_doc["limits"] = _asked_limits(pod_spec)
    _write_runtime(paths, runtime_doc)
    plan.markers, plan.runtime_doc, plan.pod_spec = ctx.markers, runtime_doc, pod_spec
    return plan


def set_up_ahead(engine: PodRuntime, plan: EpisodePlan) -> PodReady | None:
    """The plan's pod, set up now for an episode that plays later; None for a skipped episode."""
    if plan.pod_spec is None:
        return None
    stack = ExitStack()
    try:
        pod = _set_up_pod(stack, engine, plan.pod_spec, plan.paths)
    except BaseException:
        stack.close()
        raise
    return PodReady(stack, pod)


def play_episode(
    engine: PodRuntime,
    plan: EpisodePlan,
    limits: CollectLimits | None = None,
    ready: Callable[[], PodReady | None] | None = None,
    on_started: Callable[[], None] | None = None,
    on_ended: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Run the planned episode in its pod (`ready` gives one set up ahead; its set-up error is this episode's),
    collect, normalize, check. `on_started` is called once the harness runs (the next pod may be set up then),
    `on_ended` once it has ended (the next harness may start while this episode is collected and checked)."""
    harness, scenario, paths, execution = plan.harness, plan.scenario, plan.paths, plan.execution
    finish = partial(_finish, paths, harness, scenario, plan.run_id, plan.episode_id, plan.started, execution)
    if plan.pod_spec is None:
        return finish(None)
    # The normalizer's child process starts while the harness runs: its imports are not the episode's wait.
    normalizer = Normalizer(harness)
    try:
        return _play(engine, plan, normalizer, finish, limits, ready, on_started, on_ended)
    finally:
        normalizer.close()


def _play(
    engine: PodRuntime,
    plan: EpisodePlan,
    normalizer: Normalizer,
    finish: Callable[..., dict[str, Any]],
    limits: CollectLimits | None,
    ready: Callable[[], PodReady | None] | None,
    on_started: Callable[[], None] | None,
    on_ended: Callable[[], None] | None,
) -> dict[str, Any]:
    harness, scenario, paths, execution = plan.harness, plan.scenario, plan.paths, plan.execution
    assert plan.pod_spec is not None
    collection: Collection | None = None
    try:
        with ExitStack() as stack:
            got = ready() if ready is not None else None
            if got is not None:
                stack.enter_context(got.stack)
                pod = got.pod
            else:
                pod = _set_up_pod(stack, engine, plan.pod_spec, paths)
            plan.runtime_doc["limits"] = pod.limits()
            _write_runtime(paths, plan.runtime_doc)
            hc, proxy = pod.harness, pod.proxy
            try:
                t0 = time.monotonic()
                hc.start()
                log.info("harness started", harness=harness.name, scenario=scenario.name)
                normalizer.start()
                if on_started is not None:
                    on_started()
                code = hc.wait(plan.wait_for)
                execution["seconds"] = round(time.monotonic() - t0, 3)
                if code is None:
                    hc.kill()
                    # The scenario's own bound is a named finding; the run's --timeout is a plain timeout.
                    status = "deadline" if "deadline_seconds" in execution else "timeout"
                    execution.update(status=status, exit_code=None)
                    log.warning("harness did not end and was killed", status=status, seconds=plan.wait_for)
                else:
                    execution.update(status="exited", exit_code=code)
                if on_ended is not None:
                    on_ended()
                log.info("collecting", harness=harness.name, scenario=scenario.name)
                # Everything copied out from here on draws on one budget; what the harness left that cannot be
                # copied safely (links, devices, over-cap files) becomes a finding.
                collection = Collection(limits or CollectLimits())
                with collection.harness_share():
                    hc.save_logs(paths.harness_log, collection)
                    paths.native.mkdir()
                    # Before the proxy stops: it holds the harness's writable paths, where the native logs are.
                    for native in harness.native_paths:
                        hc.copy_out(native, paths.native, collection)
            except Exception:
                collection = collection or Collection(limits or CollectLimits())
                _collect_proxy(proxy, paths, plan.markers, collection)
                raise
            # Not on an interrupt: then the pod is removed at once and the run leaves no summary.
            _collect_proxy(proxy, paths, plan.markers, collection)
    except Exception as exc:
        execution.update(status="error", error=f"{type(exc).__name__}: {exc}")
        (paths.root / "episode-error.txt").write_text(traceback.format_exc())
        log.error("episode could not run", error=str(exc))
    return finish(True, collection, normalizer)


def _set_up_pod(stack: ExitStack, engine: PodRuntime, spec: PodSpec, paths: EpisodePaths) -> Pod:
    """The pod, set up once more if the engine failed before the harness was started. No instruction of the
    harness has run then, so the failure cannot be the harness's doing, and an engine under load (Podman's API
    service most of all) fails a set-up step now and then; the first failure is kept beside the episode, and a
    second one is the episode's error."""
    for attempt in range(1, POD_SETUP_ATTEMPTS + 1):
        try:
            return stack.enter_context(engine.pod(spec))
        except Exception as exc:
            if attempt == POD_SETUP_ATTEMPTS:
                raise
            (paths.root / f"pod-setup-error-{attempt}.txt").write_text(traceback.format_exc())
            log.warning("pod set-up failed; setting it up once more", error=f"{type(exc).__name__}: {exc}"[:500])
    raise AssertionError("unreachable")


def _write_runtime(paths: EpisodePaths, doc: dict[str, Any]) -> None:
    validate(doc, "runtime/v1", "runtime.json")
    write_json(paths.runtime, doc)


def _collect_proxy(proxy: ContainerHandle, paths: EpisodePaths, markers: str, collection: Collection) -> None:
    # A clean stop lets the addon write its `end` event before we copy the witness out.
    proxy.stop(PROXY_STOP_SECONDS)
    proxy.save_logs(paths.proxy_log, collection)
    proxy.copy_out("/probe/witness/witness.jsonl", paths.root, collection)
    proxy.copy_out(markers, paths.root, collection)


def _finish(
    paths: EpisodePaths,
    harness: Harness,
    scenario: Scenario,
    run_id: str,
    episode_id: str,
    started: str,
    execution: dict[str, Any],
    ran: bool | None,
    collection: Collection | None = None,
    normalizer: Normalizer | None = None,
) -> dict[str, Any]:
    # Loaded here, not with this module: the suite imports it while the first pod starts (suite.import_ahead).
    from orchestrator.verdict import collect_evidence, judge, normalize_native, result_skeleton

    result = result_skeleton(harness.name, scenario.name, run_id, episode_id, started, execution)
    if collection is not None:
        result["collection"] = collection.to_json()
    try:
        if ran:
            # A timed-out or crashed harness still has whatever it logged checked (execution apart from evidence).
            rollout, result["normalize"] = normalize_native(harness, paths.native, None, normalizer)
            if rollout is not None:
                write_json(paths.rollout, rollout)
            collected = (collection.limits if collection is not None else CollectLimits()).max_bytes
            ev = collect_evidence(scenario.data, paths, rollout, result["normalize"]["message"], collected)
            judge(result, scenario.data, ev)
        result["finished_at"] = now_iso()
        validate(result, "scenario-result/v1", "scenario_result")
    except Exception as exc:  # RecursionError included: this episode is an error, the run goes on
        (paths.root / "check-error.txt").write_text(traceback.format_exc())
        log.error("episode could not be checked", error=f"{type(exc).__name__}: {exc}"[:500])
        failed = {**execution, "status": "error", "error": f"checking failed: {type(exc).__name__}: {str(exc)[:500]}"}
        result = result_skeleton(harness.name, scenario.name, run_id, episode_id, started, failed)
        if collection is not None:
            result["collection"] = collection.to_json()
        result["finished_at"] = now_iso()
    write_json(paths.result, result)
    return result
