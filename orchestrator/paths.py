"""Where every evidence file of a run lives on the host; the one place that names them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["EpisodePaths", "RunPaths", "is_plain_name"]


@dataclass(frozen=True)
class RunPaths:
    """
    out/
    ├── suite.json              what the run set out to do (written first)
    └── <harness>/<scenario>/   one EpisodePaths each
    """

    root: Path

    @property
    def suite(self) -> Path:
        return self.root / "suite.json"

    def episode(self, harness: str, scenario: str) -> EpisodePaths:
        """Raises ValueError for a name that is not one plain folder name: names read from a saved run's files
        (a shard's summary.json) must not lead out of the run directory."""
        for name in (harness, scenario):
            if not is_plain_name(name):
                raise ValueError(f"episode name {name!r} is not a plain folder name")
        return EpisodePaths(self.root / harness / scenario)


def is_plain_name(name: str) -> bool:
    """One folder name, nothing that leads elsewhere: not empty, `.` or `..`, no `/` (nor NUL)."""
    return name not in ("", ".", "..") and "/" not in name and "\0" not in name


@dataclass(frozen=True)
class EpisodePaths:
    """
    <harness>/<scenario>/
    ├── witness.jsonl          written by the proxy only (probe-witness/v1)
    ├── rollout.json           normalized self-report (probe-rollout/v1), absent if normalization failed
    ├── native/                the harness's own logs, copied untouched
    ├── markers/               marker files the tool commands wrote (an audit's: markers.json, what it read of them)
    ├── harness.log            harness stdout + stderr
    ├── proxy.log              mitmproxy output
    ├── runtime.json           images, versions, launch (runtime/v1)
    ├── scenario.json          the scenario as the proxy played it (never shown to the harness)
    └── scenario_result.json   execution, normalization, checks, verdict (scenario-result/v1)
    """

    root: Path

    @property
    def witness(self) -> Path:
        return self.root / "witness.jsonl"

    @property
    def rollout(self) -> Path:
        return self.root / "rollout.json"

    @property
    def native(self) -> Path:
        return self.root / "native"

    @property
    def markers(self) -> Path:
        return self.root / "markers"

    @property
    def harness_log(self) -> Path:
        return self.root / "harness.log"

    @property
    def proxy_log(self) -> Path:
        return self.root / "proxy.log"

    @property
    def runtime(self) -> Path:
        return self.root / "runtime.json"

    @property
    def scenario(self) -> Path:
        return self.root / "scenario.json"

    @property
    def result(self) -> Path:
        return self.root / "scenario_result.json"
