"""One episode (one harness x one scenario): private network, proxy, harness, collection, normalization, checks."""

from __future__ import annotations

import hashlib
import json
import os
import time
import traceback
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog

from orchestrator.checks import PROFILE, Evidence, Status, gate, read_witness, run_checks
from orchestrator.evidence import FormatError, validate
from orchestrator.harnesses import Harness, LaunchContext, NormalizeError
from orchestrator.images import BuiltImage
from orchestrator.paths import EpisodePaths
from orchestrator.runtime import ContainerSpec, Engine, create_labels
from orchestrator.scenarios import Scenario

log = structlog.get_logger(__name__)

__all__ = ["EpisodeImages", "now_iso", "run_episode", "write_json"]

PROXY_READY = b"listening at"
PROXY_STOP_SECONDS = 10


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def write_json(path: Path, data: Any) -> None:
    """Atomic: a reader never sees half a file."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")
    os.replace(tmp, path)


@dataclass(frozen=True)
class EpisodeImages:
    proxy: BuiltImage
    proxy_version: str | None
    harness: BuiltImage
    harness_version: str | None


def _image_json(img: BuiltImage, version: str | None) -> dict[str, Any]:
    return {
        "name": img.name,
        "tag": img.tag,
        "image_id": img.image_id,
        "inputs_sha256": img.inputs_sha256,
        "files": img.files,
        "version": version,
    }


def run_episode(
    engine: Engine,
    harness: Harness,
    scenario: Scenario,
    images: EpisodeImages,
    paths: EpisodePaths,
    run_id: str,
    timeout: float,
) -> dict[str, Any]:
    """Run, collect, normalize, check; returns the scenario_result it wrote. Never raises for harness faults."""
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
    override = scenario.override(harness.name)
    if override and override.get("skip"):
        execution.update(status="skipped", error=override["reason"])
        return _finish(paths, harness, scenario, run_id, episode_id, started, execution, None)

    ctx = LaunchContext(task_id=scenario.name)
    launch = harness.launch(scenario, ctx)
    write_json(
        paths.runtime,
        {
            "schema": "runtime/v1",
            "engine": {
                "server_version": engine.server_version(),
                "docker_host": os.environ.get("DOCKER_HOST"),
            },
            "harness": _image_json(images.harness, images.harness_version),
            "proxy": _image_json(images.proxy, images.proxy_version),
            "launch": {
                "command": launch.command,
                "environment": launch.environment,
                "files": {p: hashlib.sha256(d).hexdigest() for p, d in launch.files.items()},
                "options": harness.options,
            },
            "scenario_sha256": scenario.sha256,
        },
    )
    labels = create_labels(run_id, episode=episode_id, harness=harness.name, scenario=scenario.name)
    try:
        with (
            engine.network(f"{episode_id}-net", labels) as net,
            engine.volume(f"{episode_id}-markers", labels) as markers,
        ):
            proxy_spec = ContainerSpec(
                image=images.proxy.tag,
                name=f"{episode_id}-proxy",
                command=[
                    "--set",
                    "probe_scenario=/probe/scenario/scenario.json",
                    "--set",
                    "probe_witness=/probe/witness/witness.jsonl",
                    "--set",
                    f"probe_markers={ctx.markers}",
                ],
                network=str(net.name),
                aliases=["provider"],
                volumes={str(markers.name): {"bind": ctx.markers, "mode": "ro"}},
                files={"/probe/scenario/scenario.json": scenario.provider_json()},
                files_base="/probe/scenario",
                labels={**labels, "harness-probe.role": "proxy"},
                mem_limit="1g",
            )
            harness_spec = ContainerSpec(
                image=images.harness.tag,
                name=f"{episode_id}-harness",
                command=launch.command,
                environment={"HOME": ctx.home, **launch.environment},
                user="probe",
                working_dir=ctx.workdir,
                network=str(net.name),
                volumes={str(markers.name): {"bind": ctx.markers, "mode": "rw"}},
                files=launch.files,
                files_base=ctx.home,
                files_owner=(1000, 1000),
                labels={**labels, "harness-probe.role": "harness"},
            )
            with engine.container(proxy_spec) as proxy:
                proxy.start()
                try:
                    proxy.wait_for_log(PROXY_READY, timeout=60)
                    with engine.container(harness_spec) as hc:
                        t0 = time.monotonic()
                        hc.start()
                        log.info("harness started", harness=harness.name, scenario=scenario.name)
                        code = hc.wait(timeout)
                        execution["seconds"] = round(time.monotonic() - t0, 3)
                        if code is None:
                            hc.kill()
                            execution.update(status="timeout", exit_code=None)
                            log.warning("harness timed out and was killed", timeout=timeout)
                        else:
                            execution.update(status="exited", exit_code=code)
                        paths.harness_log.write_bytes(hc.logs())
                        paths.native.mkdir()
                        for native in harness.native_paths:
                            hc.copy_out(native, paths.native)
                finally:
                    # A clean stop lets the addon write its `end` event before we copy the witness out.
                    proxy.stop(PROXY_STOP_SECONDS)
                    paths.proxy_log.write_bytes(proxy.logs())
                    proxy.copy_out("/probe/witness/witness.jsonl", paths.root)
                    proxy.copy_out(ctx.markers, paths.root)
    except Exception as exc:
        execution.update(status="error", error=f"{type(exc).__name__}: {exc}")
        (paths.root / "episode-error.txt").write_text(traceback.format_exc())
        log.error("episode could not run", error=str(exc))
    return _finish(paths, harness, scenario, run_id, episode_id, started, execution, True)


def _normalize(harness: Harness, paths: EpisodePaths) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    if not paths.native.is_dir():
        return None, {"status": "error", "message": "no native logs were collected"}
    try:
        rollout = harness.normalize(paths.native)
        validate(rollout, "probe-rollout/v1", "normalized rollout")
    except (NormalizeError, FormatError) as exc:
        return None, {"status": "error", "message": str(exc)}
    except Exception as exc:  # a normalizer bug is reported for this episode, not a crash of the run
        return None, {"status": "error", "message": f"normalizer crashed: {type(exc).__name__}: {exc}"}
    write_json(paths.rollout, rollout)
    return rollout, {"status": "ok", "message": None}


def check_episode(scenario: Scenario, paths: EpisodePaths, rollout: dict[str, Any] | None, why: str | None) -> Evidence:
    ev = Evidence(scenario=scenario.data, rollout=rollout)
    if rollout is None:
        ev.errors["rollout"] = why or "no rollout"
    try:
        ev.witness = read_witness(paths.witness)
    except FormatError as exc:
        ev.errors["witness"] = str(exc)
    if paths.markers.is_dir():
        ev.markers = {p.name: p.read_text(errors="replace") for p in paths.markers.iterdir() if p.is_file()}
    return ev


def _finish(
    paths: EpisodePaths,
    harness: Harness,
    scenario: Scenario,
    run_id: str,
    episode_id: str,
    started: str,
    execution: dict[str, Any],
    ran: bool | None,
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "schema": "scenario-result/v1",
        "profile": PROFILE,
        "harness": harness.name,
        "scenario": scenario.name,
        "run_id": run_id,
        "episode_id": episode_id,
        "started_at": started,
        "finished_at": "",
        "execution": execution,
        "normalize": {"status": "skipped", "message": None},
        "checks": [],
        "gate": {"P0": False},
        "verdict": "skipped" if execution["status"] == "skipped" else "error",
    }
    if ran:
        # A timed-out or crashed harness still has whatever it logged checked (execution apart from evidence).
        rollout, result["normalize"] = _normalize(harness, paths)
        ev = check_episode(scenario, paths, rollout, result["normalize"]["message"])
        checks = run_checks(ev, scenario.scope)
        result["inputs_unavailable"] = dict(ev.errors)
        result["checks"] = [c.to_json() for c in checks]
        result["gate"] = {"P0": gate(checks, "P0"), "P1": gate(checks, "P1")}
        if execution["status"] == "error":
            result["verdict"] = "error"
        else:
            result["verdict"] = "pass" if result["gate"]["P0"] else "fail"
        failed = [c.id for c in checks if c.status == Status.FAIL]
        log.info("episode checked", scenario=scenario.name, verdict=result["verdict"], failed=failed)
    result["finished_at"] = now_iso()
    validate(result, "scenario-result/v1", "scenario_result")
    write_json(paths.result, result)
    return result
