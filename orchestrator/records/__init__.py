"""Typed records of what flows through harness-probe (rollouts, results, suite, runtime) and the rollout builder.

Each record is a `TypedDict`: the data stays the plain JSON dict it always was (no validation, no cost at run
time), and mypy checks its keys. tests/unit/records/ pins every record to its JSON Schema.
"""

from __future__ import annotations

from orchestrator.records.builder import ROLLOUT_FORMAT, RolloutBuilder, exit_status, tool_record
from orchestrator.records.calls import ModelCall, TokenStats, token_stats
from orchestrator.records.gaps import Gap, gap, unique_gaps
from orchestrator.records.invocations import Invocation, Message, RequestedCall
from orchestrator.records.outcome import Outcome, outcome
from orchestrator.records.result import (
    CheckRow,
    Collection,
    CollectionFinding,
    CollectionLimits,
    Execution,
    Gate,
    NormalizeRecord,
    ScenarioResult,
)
from orchestrator.records.rollout import Compaction, Corroboration, HarnessId, Provenance, Rollout
from orchestrator.records.runtime import (
    EngineInfo,
    ImageInfo,
    LaunchRecord,
    Limits,
    LimitsPair,
    RuntimeRecord,
    ToolInfo,
)
from orchestrator.records.steps import Step
from orchestrator.records.suite import (
    Counts,
    EpisodeEvidence,
    EpisodeRef,
    FirstFailure,
    ImageRef,
    Interrupted,
    MergedFrom,
    Shard,
    Suite,
    SuiteHarness,
    SuiteScenario,
    Summary,
    SummaryEpisode,
    SummaryHarness,
    SummaryInputs,
    Timestamps,
)
from orchestrator.records.tools import ToolRecord

__all__ = [
    "ROLLOUT_FORMAT",
    "CheckRow",
    "Collection",
    "CollectionFinding",
    "CollectionLimits",
    "Compaction",
    "Corroboration",
    "Counts",
    "EngineInfo",
    "EpisodeEvidence",
    "EpisodeRef",
    "Execution",
    "FirstFailure",
    "Gap",
    "Gate",
    "HarnessId",
    "ImageInfo",
    "ImageRef",
    "Interrupted",
    "Invocation",
    "LaunchRecord",
    "Limits",
    "LimitsPair",
    "MergedFrom",
    "Message",
    "ModelCall",
    "NormalizeRecord",
    "Outcome",
    "Provenance",
    "RequestedCall",
    "Rollout",
    "RolloutBuilder",
    "RuntimeRecord",
    "ScenarioResult",
    "Shard",
    "Step",
    "Suite",
    "SuiteHarness",
    "SuiteScenario",
    "Summary",
    "SummaryEpisode",
    "SummaryHarness",
    "SummaryInputs",
    "Timestamps",
    "TokenStats",
    "ToolInfo",
    "ToolRecord",
    "exit_status",
    "gap",
    "outcome",
    "token_stats",
    "tool_record",
    "unique_gaps",
]
