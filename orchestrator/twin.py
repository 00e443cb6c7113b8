"""An episode's transport twin: the same scenario played once more with the harness's transport switched (JSON <->
SSE) into the episode's `twin/` folder, and the episode judged again with it beside (transport.parity)."""

from __future__ import annotations

from typing import Any

import structlog

from orchestrator.episode import EpisodeImages, plan_episode, play_episode
from orchestrator.evidence.jsonread import read_json
from orchestrator.evidence.validate import validate
from orchestrator.harnesses import Harness
from orchestrator.output import write_json
from orchestrator.paths import EpisodePaths
from orchestrator.runtime import PodRuntime
from orchestrator.runtime.collect import CollectLimits
from orchestrator.scenarios import Scenario

log = structlog.get_logger(__name__)

__all__ = ["TWIN", "play_twin"]

TWIN = "twin"


def play_twin(
    engine: PodRuntime,
    harness: Harness,
    scenario: Scenario,
    images: EpisodeImages,
    paths: EpisodePaths,
    run_id: str,
    timeout: float,
    limits: CollectLimits,
    result: dict[str, Any],
) -> dict[str, Any]:
    """Play `harness`'s twin into `paths`/twin and judge the episode again with it; `result` as it was when the
    harness has one transport only, or when the episode itself was not judged (skipped, interrupted, an error)."""
    twin = harness.twin()
    if twin is None or result.get("verdict") not in ("pass", "fail"):
        return result
    from orchestrator.verdict import attach_twin, collect_evidence, judge, read_rollout

    log.info("transport twin", harness=harness.name, scenario=scenario.name, options=twin.options)
    twin_paths = EpisodePaths(paths.root / TWIN)
    play_episode(engine, plan_episode(engine, twin, scenario, images, twin_paths, run_id, timeout), limits)
    played = read_json(paths.scenario)
    rollout, why = read_rollout(paths.rollout)
    ev = collect_evidence(played, paths, rollout, why or result["normalize"]["message"], limits.max_bytes)
    attach_twin(ev, paths, None)
    judged = judge({**result, "checks": []}, played, ev)
    validate(judged, "scenario-result/v1", "scenario_result")
    write_json(paths.result, judged)
    return judged
