"""A run's records: what it set out to do (`suite.json`) and what it found (`summary.json`)."""
# No `from __future__ import annotations`: TypedDict reads NotRequired/Required from evaluated annotations.

from typing import NotRequired, TypedDict

from orchestrator.records.result import CheckRow, Execution, Gate, NormalizeRecord
from orchestrator.records.runtime import HarnessOverride

__all__ = [
    "Counts",
    "EpisodeEvidence",
    "EpisodeRef",
    "FirstFailure",
    "ImageRef",
    "Interrupted",
    "MergedFrom",
    "Shard",
    "Suite",
    "SuiteHarness",
    "SuiteScenario",
    "Summary",
    "SummaryEpisode",
    "SummaryHarness",
    "SummaryInputs",
    "Timestamps",
]


class SuiteHarness(TypedDict):
    name: str
    options: dict[str, str]
    override: NotRequired[HarnessOverride]


class SuiteScenario(TypedDict):
    name: str
    sha256: str


class ImageRef(TypedDict):
    tag: str
    image_id: str
    inputs_sha256: str


class Shard(TypedDict):
    index: int
    count: int


class EpisodeRef(TypedDict):
    harness: str
    scenario: str


class MergedFrom(TypedDict):
    run_id: str
    source: str
    shard: NotRequired[dict[str, int] | None]  # the source's shard as it recorded it (the schema leaves it open)


class Suite(TypedDict):
    """suite.json, written first: the run's plan and the inputs it was made from."""

    schema: str
    run_id: str
    started_at: str
    tool_version: str
    command: NotRequired[str]
    harnesses: list[SuiteHarness]
    scenarios: list[SuiteScenario]
    images: dict[str, ImageRef]
    inputs: dict[str, str]
    timeout_seconds: NotRequired[float]
    shard: NotRequired[Shard]
    episodes: NotRequired[list[EpisodeRef]]
    merged_from: NotRequired[list[MergedFrom]]


class Timestamps(TypedDict):
    started_at: str
    finished_at: str


# `pass` is a keyword: the functional form.
Counts = TypedDict(
    "Counts",
    {"episodes": int, "pass": int, "fail": int, "error": int, "skipped": int, "interrupted": NotRequired[int]},
)


class Interrupted(TypedDict):
    """What a run stopped before its end got through."""

    signal: str | None
    finished: int
    interrupted: int
    not_run: list[EpisodeRef]


# File names as keys: the functional form.
EpisodeEvidence = TypedDict(
    "EpisodeEvidence",
    {
        "witness.jsonl": str | None,
        "rollout.json": str | None,
        "scenario_result.json": str | None,
        "runtime.json": str | None,
    },
)


class FirstFailure(TypedDict):
    source: str
    reason: str


class SummaryEpisode(TypedDict):
    scenario: str
    episode_id: str
    verdict: str
    gate: Gate
    execution: Execution
    normalize: NormalizeRecord
    inputs_unavailable: dict[str, str]
    checks: list[CheckRow]
    first_failure: FirstFailure | None
    evidence: EpisodeEvidence
    timestamps: Timestamps


class SummaryHarness(TypedDict):
    name: str
    options: dict[str, str]
    verdict: str
    scenarios: list[SummaryEpisode]


class SummaryInputs(TypedDict):
    suite_json: str | None
    files: dict[str, str]
    images: dict[str, ImageRef]


class Summary(TypedDict):
    """summary.json, written last and atomically; a run stopped before its end writes a partial one (`interrupted`)."""

    schema: str
    profile: str
    run_id: str
    tool_version: str
    full_suite: bool
    timestamps: Timestamps
    verdict: str
    exit_code: int
    errors: list[str]
    counts: Counts
    inputs: SummaryInputs
    harness_overrides: NotRequired[dict[str, HarnessOverride]]
    missing: list[EpisodeRef]
    interrupted: NotRequired[Interrupted]
    harnesses: list[SummaryHarness]
