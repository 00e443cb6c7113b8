"""Captured real episodes for normalizer tests: expand them, and replay the checks their real run gave."""

from __future__ import annotations

import gzip
import hashlib
import json
import lzma
import shutil
from pathlib import Path
from typing import Any

from orchestrator.checks import CheckResult, run_checks, scope_of
from orchestrator.evidence import faults
from orchestrator.harnesses import get_harness
from orchestrator.paths import EpisodePaths
from orchestrator.verdict import collect_evidence, normalize_native

__all__ = [
    "assert_leaves_native_untouched",
    "assert_replays_its_real_run",
    "captured",
    "fixtures",
    "gap_codes",
    "materialize",
    "replay",
    "witness",
]

_ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "native"
# Large captured files are stored compressed; they are expanded to their real names before use.
_DECOMPRESS = {".gz": gzip.decompress, ".xz": lzma.decompress}


def fixtures(harness: str) -> Path:
    return _ROOT / harness


def captured(harness: str) -> list[str]:
    return sorted(p.name for p in fixtures(harness).iterdir() if p.is_dir())


def materialize(harness: str, name: str, dest: Path) -> EpisodePaths:
    """Expand a captured episode into dest, laid out like a run's episode directory."""
    src = fixtures(harness) / name
    for path in sorted(src.rglob("*")):
        if not path.is_file():
            continue
        target = dest / path.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix in _DECOMPRESS:
            target.with_suffix("").write_bytes(_DECOMPRESS[path.suffix](path.read_bytes()))
        else:
            shutil.copyfile(path, target)
    return EpisodePaths(dest)


def witness(paths: EpisodePaths) -> list[dict[str, Any]]:
    return [json.loads(line) for line in paths.witness.read_text().splitlines() if line.strip()]


def gap_codes(rollout: dict[str, Any]) -> dict[str, Any]:
    return {g["code"]: g.get("labels") for g in rollout["gaps"]}


def replay(paths: EpisodePaths, rollout: dict[str, Any]) -> dict[str, CheckResult]:
    """Every check over a captured episode with the given rollout."""
    scenario = json.loads(paths.scenario.read_text())
    return {r.id: r for r in run_checks(collect_evidence(scenario, paths, rollout, None), scope_of(scenario))}


def assert_replays_its_real_run(harness: str, name: str, dest: Path) -> None:
    """Normalizing the captured native files again gives a valid rollout and the check statuses of the real run."""
    paths = materialize(harness, name, dest)
    rollout, record = normalize_native(get_harness(harness), paths.native)
    assert record == {"status": "ok", "message": None}
    assert rollout is not None
    assert [str(f) for f in faults(rollout, "probe-rollout/v1")] == []
    # Process checks read the execution record, which a captured episode does not keep: artifact checks only.
    got = {k: str(v.status) for k, v in replay(paths, rollout).items() if v.kind != "process"}
    recorded = json.loads((paths.root / "checks.json").read_text())["checks"]
    # A check added after the capture must not apply to it (captures predate the scenarios such checks serve).
    assert {k: v for k, v in got.items() if k not in recorded} == dict.fromkeys(
        set(got) - set(recorded), "not_applicable"
    )
    assert {k: v for k, v in got.items() if k in recorded} == recorded


def assert_leaves_native_untouched(harness: str, name: str, dest: Path) -> None:
    """Normalizing a captured episode changes none of its native files (a normalizer only reads)."""
    paths = materialize(harness, name, dest)

    def digests() -> dict[str, str]:
        return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths.native.rglob("*") if p.is_file()}

    before = digests()
    get_harness(harness).normalize(paths.native)
    assert digests() == before
