"""The one shape of a real-harness test: run the catalogue once, compare its verdict table with the golden file.

A golden file pins what a pinned harness version gets right and wrong. After a deliberate change (a new pin,
a new check, a normalizer fix), rewrite it from a real run and review the diff:

    .venv/bin/harness-probe run -H NAME -o /tmp/NAME-run
    .venv/bin/python -m tests.harnesses.golden NAME /tmp/NAME-run

or run the harness's test with HARNESS_PROBE_UPDATE_GOLDEN=1.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from orchestrator.evidence import load_json
from orchestrator.scenarios import list_scenarios
from tests.integration.conftest import hp, labelled

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "golden"
UPDATE = os.environ.get("HARNESS_PROBE_UPDATE_GOLDEN") == "1"


def golden_path(harness: str) -> Path:
    return GOLDEN_DIR / harness / "verdicts.json"


def results(out: Path, harness: str) -> dict[str, dict[str, Any]]:
    found = sorted(out.glob(f"{harness}/*/scenario_result.json"))
    return {p.parent.name: load_json(p, "scenario-result/v1") for p in found}


def verdict_table(out: Path, harness: str) -> dict[str, Any]:
    """scenario -> verdict, how the harness process ended, normalization, and every check's status."""
    version = None
    for runtime in sorted(out.glob(f"{harness}/*/runtime.json")):
        version = json.loads(runtime.read_text())["harness"]["version"]
    return {
        "harness": harness,
        "version": version,
        "scenarios": {
            name: {
                "verdict": r["verdict"],
                "execution": r["execution"]["status"],
                "normalize": r["normalize"]["status"],
                "checks": {c["id"]: c["status"] for c in r["checks"]},
            }
            for name, r in results(out, harness).items()
        },
    }


def differences(golden: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """One readable line per difference, naming the scenario and the check.

    A golden table's `varies` names checks ("scenario / check": why) whose outcome depends on the harness's own
    timing, seen both ways in real runs of the same image: either pass or fail is accepted there, nothing else.
    Where such a check is P0 the scenario's verdict varies with it, and is named too ("scenario / verdict").
    """
    varies: dict[str, str] = golden.get("varies", {})
    lines = []
    if golden.get("version") != now.get("version"):
        lines.append(f"harness version: golden {golden.get('version')!r}, now {now.get('version')!r}")
    for name in sorted(set(golden["scenarios"]) | set(now["scenarios"])):
        g, n = golden["scenarios"].get(name), now["scenarios"].get(name)
        if g is None or n is None:
            lines.append(f"{name}: {'new scenario' if g is None else 'scenario missing from this run'}")
            continue
        for key in ("verdict", "execution", "normalize"):
            # A scenario's verdict may vary with a P0 check that does (named `scenario / verdict`, with why).
            if key == "verdict" and f"{name} / verdict" in varies and {g.get(key), n.get(key)} <= {"pass", "fail"}:
                continue
            if g.get(key) != n.get(key):
                lines.append(f"{name}: {key} golden {g.get(key)!r}, now {n.get(key)!r}")
        for check in sorted(set(g["checks"]) | set(n["checks"])):
            before, after = g["checks"].get(check, "absent"), n["checks"].get(check, "absent")
            if f"{name} / {check}" in varies and {before, after} <= {"pass", "fail"}:
                continue
            if before != after:
                lines.append(f"{name} / {check}: golden {before}, now {after}")
    return lines


def write_golden(out: Path, harness: str) -> Path:
    path = golden_path(harness)
    path.parent.mkdir(parents=True, exist_ok=True)
    table = verdict_table(out, harness)
    if path.is_file() and (varies := json.loads(path.read_text()).get("varies")):
        table["varies"] = varies  # written by hand, with the runs that showed it; kept across updates
    path.write_text(json.dumps(table, indent=2, sort_keys=True) + "\n")
    return path


def run_catalogue(harness: str, out: Path, *args: str) -> int:
    """The whole catalogue, as a user runs it; returns the exit code."""
    res = hp("run", "-H", harness, "-o", str(out), *args, timeout=3600)
    assert (out / "summary.json").is_file(), res.stdout[-3000:] + res.stderr[-3000:]
    return res.code


def _tail(episode: Path) -> dict[str, list[str]]:
    """The last lines of what the run kept about an episode that errored: its traceback, set-up failures, logs."""
    names = ("episode-error.txt", "check-error.txt", "pod-setup-error-1.txt", "harness.log", "proxy.log")
    return {n: (episode / n).read_text(errors="replace").splitlines()[-12:] for n in names if (episode / n).is_file()}


def assert_matches_golden(out: Path, code: int, harness: str) -> None:
    now = verdict_table(out, harness)
    assert sorted(now["scenarios"]) == sorted(s.name for s in list_scenarios())
    if UPDATE:
        write_golden(out, harness)
    diff = differences(json.loads(golden_path(harness).read_text()), now)
    reasons = {
        f"{name} / {c['id']}": c["reasons"][:2]
        for name, r in results(out, harness).items()
        for c in r["checks"]
        if c["status"] == "fail" and any(line.startswith(f"{name} / {c['id']}:") for line in diff)
    }
    # An infrastructure error says why in the episode's execution record and log, not in its checks: show those
    # first, since every check of such an episode fails only as a consequence.
    errors = {
        name: {"execution": r["execution"], "normalize": r["normalize"], "log": _tail(out / harness / name)}
        for name, r in results(out, harness).items()
        if r["verdict"] == "error"
    }
    assert diff == [], (
        f"verdicts differ from {golden_path(harness).relative_to(GOLDEN_DIR.parent.parent)}:\n"
        + "\n".join(diff)
        + ("\ninfrastructure errors: " + json.dumps(errors, indent=1)[:6000] if errors else "")
        + "\nreasons now: "
        + json.dumps(reasons, indent=1)[:4000]
    )
    verdicts = {s["verdict"] for s in now["scenarios"].values()}
    assert code == (2 if "error" in verdicts else 1 if "fail" in verdicts else 0)
    summary = json.loads((out / "summary.json").read_text())
    for kind in ("ps", "network", "volume"):
        assert labelled(kind, summary["run_id"]) == [], f"docker {kind} still shows objects of the run"


if __name__ == "__main__":
    name, run_dir = sys.argv[1], Path(sys.argv[2])
    print(write_golden(run_dir, name))
