"""The CI suite in timed phases: lint, unit, image builds, integration, then each selected harness's golden.

    python -m tests.phases [--goldens auto|all|none] [--base REF] [--json PATH]

Goldens are chosen with `harness-probe ci select` logic (orchestrator/ci/select.py) over every path changed since
the base: the commit `.ci/last-landed` names (the last commit whose suite passed), plus uncommitted and untracked
files. A base that is absent, unreadable, unknown to this clone or not an ancestor of HEAD selects every golden:
falling back to all is always safe, and no golden whose inputs changed is ever skipped. Each harness is named at
the end, as run (and why) or skipped (and why); the phases print with their durations against the budget.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass
from pathlib import Path

from orchestrator.ci.select import Selection, image_parents, select
from orchestrator.harnesses import HARNESSES, IMAGE_FROM_OPTIONS

ROOT = Path(__file__).resolve().parent.parent
LAST_LANDED = ROOT / ".ci" / "last-landed"
BIN = Path(sys.executable).parent
BUDGET_SECONDS = 90 * 60
# What `.ci/last-landed` records is not an input of any verdict: updating it must not select every golden.
RECORD = ".ci/last-landed"


@dataclass
class Phase:
    name: str
    seconds: float
    code: int
    detail: str = ""


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False, timeout=60)


def find_base(override: str | None) -> tuple[str | None, str]:
    """The commit to diff against and how it was found, or None and why every golden runs."""
    if override:
        source, ref = "--base", override
    else:
        try:
            ref = LAST_LANDED.read_text().split()[0]
        except (OSError, IndexError):
            return None, f"{RECORD} is absent or empty"
        source = RECORD
    resolved = _git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if resolved.returncode != 0:
        return None, f"{source} names {ref!r}, which this clone does not have"
    commit = resolved.stdout.strip()
    if _git("merge-base", "--is-ancestor", commit, "HEAD").returncode != 0:
        return None, f"{source} names {commit[:12]}, which is not an ancestor of HEAD"
    return commit, f"{source}: {commit[:12]}"


def changed_since(base: str) -> list[str] | None:
    """Committed changes since `base`, and what the working tree adds (modified, staged, untracked); None if git
    cannot say (then every golden runs)."""
    committed = _git("diff", "--name-only", "--no-renames", f"{base}...HEAD")
    local = _git("status", "--porcelain", "--untracked-files=all", "--no-renames")
    if committed.returncode != 0 or local.returncode != 0:
        return None
    paths = set(committed.stdout.split("\n")) | {ln[3:] for ln in local.stdout.split("\n") if len(ln) > 3}
    return sorted(p.strip().strip('"') for p in paths if p.strip())


def golden_files() -> dict[str, list[str]]:
    """harness -> the pytest ids of its golden: its rows of tests/harnesses/test_golden.py (the verdict table and
    its own checks) and any test_{module}_*.py beside it (a variant, e.g. on Podman); '' -> files naming none."""
    from tests.harnesses import test_golden as table  # loaded on use: it imports the integration fixtures

    rel = "tests/harnesses/test_golden.py"
    out: dict[str, list[str]] = {h: [] for h in HARNESSES}
    out[""] = []
    for h in table.TABLE:
        out.setdefault(h, []).append(f"{rel}::test_verdict_table_equals_the_golden[{h}]")
    for h, check in table.OWN_CHECKS:
        out[h].append(f"{rel}::test_its_own_checks[{table._own(h, check)}]")
    for f in sorted((ROOT / "tests" / "harnesses").glob("test_*.py")):
        if f.name == "test_golden.py":
            continue
        stem = f.stem.removeprefix("test_")
        owner = max((h for h in HARNESSES if re.fullmatch(rf"{_module(h)}(_.*)?", stem)), key=len, default="")
        out[owner].append(str(f.relative_to(ROOT)))
    return out


def _module(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", name)


def probed() -> list[str]:
    """Every registered harness CI can probe unconfigured (as `ci select` counts them): not one whose image is a
    run's option (-a image=...), which has no image folder to build and no golden."""
    return sorted(h for h in HARNESSES if h not in IMAGE_FROM_OPTIONS)


def choose(mode: str, base_override: str | None) -> tuple[Selection, str]:
    """The goldens to run and the one-line reason for the choice."""
    names = probed()
    if mode == "all":
        return Selection(names, True), "--goldens all"
    if mode == "none":
        return Selection([], False), "--goldens none"
    base, how = find_base(base_override)
    if base is None:
        return Selection(names, True), f"every golden: {how}"
    paths = changed_since(base)
    if paths is None:
        return Selection(names, True), f"every golden: git could not list the changes since {how}"
    sel = select(paths, names, parents=image_parents(ROOT))
    return sel, f"changes since {how} ({len(paths)} path(s))"


def _run(name: str, cmd: list[str], env: dict[str, str] | None = None) -> Phase:
    print(f"\n=== phase {name}: {' '.join(cmd)}", flush=True)
    start = time.monotonic()
    code = subprocess.run(cmd, cwd=ROOT, env={**os.environ, **(env or {})}, check=False).returncode
    phase = Phase(name, time.monotonic() - start, code)
    print(f"=== phase {name}: exit {code} in {phase.seconds:.0f} s", flush=True)
    return phase


JUNIT_DIR = ROOT / "probe-out" / "ci-junit"


def _pytest(*args: str) -> list[str]:
    # Each pytest phase leaves a JUnit file, so the run can close on one count over all of them (the last
    # phase's own closing line counts only that phase).
    JUNIT_DIR.mkdir(parents=True, exist_ok=True)
    junit = JUNIT_DIR / f"phase-{len(list(JUNIT_DIR.glob('phase-*.xml'))) + 1:02d}.xml"
    junit.unlink(missing_ok=True)
    return [str(BIN / "pytest"), "-q", "-p", "no:cacheprovider", f"--junitxml={junit}", *args]


def junit_counts(junit_files: list[Path]) -> tuple[int, int, int]:
    """(passed, failed, skipped) over the JUnit files the pytest phases wrote; an unreadable one counts as one
    failure, never as nothing."""
    passed = failed = skipped = 0
    for f in junit_files:
        try:
            root = ET.parse(f).getroot()
        except (OSError, ET.ParseError):
            failed += 1
            continue
        for suite in [root] if root.tag == "testsuite" else root.iter("testsuite"):
            total, errs = int(suite.get("tests", 0)), int(suite.get("errors", 0))
            fails, skips = int(suite.get("failures", 0)), int(suite.get("skipped", 0))
            passed += total - errs - fails - skips
            failed += errs + fails
            skipped += skips
    return passed, failed, skipped


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.phases", description=__doc__.split("\n\n")[0])
    ap.add_argument("--goldens", choices=("auto", "all", "none"), default=os.environ.get("GOLDENS", "auto"))
    ap.add_argument("--base", default=os.environ.get("HARNESS_PROBE_CI_BASE") or None, help="diff against this ref")
    ap.add_argument("--json", type=Path, help="also write the phases here (ci-phases/v1)")
    ap.add_argument("--skip", action="append", default=[], choices=("lint", "unit", "images", "integration"))
    ap.add_argument("--record", action="store_true", help=f"when all passed on a clean tree, write HEAD to {RECORD}")
    args = ap.parse_args(argv)

    sel, why = choose(args.goldens, args.base)
    files = golden_files()
    print(f"goldens: {why}", flush=True)
    for path, reason in sorted(sel.reasons.items())[:40]:
        print(f"  {path}: {reason}")
    if len(sel.reasons) > 40:
        print(f"  ... and {len(sel.reasons) - 40} more path(s)")

    for stale in JUNIT_DIR.glob("phase-*.xml"):
        stale.unlink()
    phases: list[Phase] = []
    gates = [("lint", ["make", "--no-print-directory", "lint"]), ("unit", _pytest("tests/unit"))]
    for name, cmd in gates:
        if name in args.skip:
            continue
        phases.append(_run(name, cmd))
        if phases[-1].code != 0:  # the cheap phases gate the expensive ones
            return _finish(phases, sel, files, why, args.json)
    if "images" not in args.skip:
        wanted = sorted({"proxy", "reference", *sel.harnesses})
        phases.append(_run("images", [str(BIN / "harness-probe"), "images", "build", *wanted]))
    if "integration" not in args.skip:
        phases.append(_run("integration", _pytest("tests/integration")))
    for h in sel.harnesses:
        if files.get(h):
            phases.append(_run(f"golden {h}", _pytest(*files[h])))
    if files[""]:
        # A test file in tests/harnesses that names no harness is run every time: it drops out of no CI run.
        phases.append(_run("golden (unowned files)", _pytest(*files[""])))
    code = _finish(phases, sel, files, why, args.json)
    if code == 0 and args.record and not args.skip and args.goldens != "none":
        record_landed()
    return code


def record_landed() -> None:
    """HEAD passed: name it in .ci/last-landed, unless the tree held changes HEAD does not (then HEAD is not what
    was tested). Every golden not run was unchanged since a base that passed, so by induction all hold at HEAD."""
    local = _git("status", "--porcelain", "--untracked-files=all")
    dirty = [ln for ln in local.stdout.splitlines() if ln[3:].strip() != RECORD and ln.strip()]
    head = _git("rev-parse", "HEAD").stdout.strip()
    if local.returncode != 0 or dirty or not head:
        print(f"=== {RECORD} not written: the working tree differs from HEAD ({len(dirty)} path(s))")
        return
    LAST_LANDED.write_text(head + "\n")
    print(f"=== {RECORD} now names {head[:12]}: commit it, and the next run diffs against this one")


def _finish(phases: list[Phase], sel: Selection, files: dict[str, list[str]], why: str, out: Path | None) -> int:
    total = sum(p.seconds for p in phases)
    print("\n=== phases (seconds; budget 90 min for the whole CI run)")
    for p in phases:
        print(f"  {p.name:<28} {p.seconds:8.0f}  {'ok' if p.code == 0 else f'FAILED (exit {p.code})'}")
    print(f"  {'total':<28} {total:8.0f}  of {BUDGET_SECONDS} ({total / BUDGET_SECONDS:.0%})")
    ran = {p.name.removeprefix("golden ") for p in phases if p.name.startswith("golden ")}
    print(f"=== goldens ({why})")
    for h in sorted(HARNESSES):
        if h in IMAGE_FROM_OPTIONS:
            print(f"  {h}: not a CI golden (its image is a run's option; its tests run in unit and integration)")
        elif h in ran:
            reason = "every golden" if sel.all else "its inputs changed"
            print(f"  {h}: ran ({reason}: {len(files[h])} test(s))")
        elif h == "reference" and any(p.name == "integration" for p in phases):
            print(f"  {h}: ran in the integration phase (its tests are tests/integration, run every time)")
        elif h in sel.harnesses and not files.get(h):
            print(f"  {h}: selected, but tests/harnesses has no golden for it")
        elif h in sel.harnesses:
            print(f"  {h}: not run (an earlier phase failed)")
        elif why.startswith("--goldens"):
            print(f"  {h}: skipped ({why})")
        else:
            print(f"  {h}: skipped (none of its inputs changed: its adapter, image, the proxy, checks, scenarios)")
    if out:
        record = {
            "schema": "ci-phases/v1",
            "total_seconds": round(total, 1),
            "budget_seconds": BUDGET_SECONDS,
            "goldens": {"selected": sel.harnesses, "all": sel.all, "why": why},
            "phases": [asdict(p) | {"seconds": round(p.seconds, 1)} for p in phases],
        }
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(record, indent=2) + "\n")
    passed, failed, skipped = junit_counts(sorted(JUNIT_DIR.glob("phase-*.xml")))
    print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
    return next((p.code for p in phases if p.code != 0), 0)


if __name__ == "__main__":
    sys.exit(main())
