"""`harness-probe run`: probe harnesses with scenarios and print the verdicts."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import click
import structlog
import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from orchestrator.cli.common import ExtraCa, ImageArchives, Rebuild, Runtime, build_options, connect, say_why
from orchestrator.cli.run_variant import HarnessSource, HarnessVersion, print_overrides, resolve_variants
from orchestrator.errors import EXIT_ERROR, EXIT_INTERRUPTED
from orchestrator.evidence.text import clean
from orchestrator.harnesses import Harness, get_harness, registry
from orchestrator.output import check_output
from orchestrator.parallel import default_jobs, parse_shard, shard_slice
from orchestrator.progress import Progress
from orchestrator.runtime.collect import CollectLimits
from orchestrator.scenarios import Scenario, list_scenarios, load_scenario
from orchestrator.suite import RunConfig, RunInterrupted, SuiteResult, run_suite

if TYPE_CHECKING:
    from orchestrator.audit import AuditResult

log = structlog.get_logger(__name__)

_SYMBOL = {"pass": "✓", "fail": "✗", "not_applicable": "—"}
# Seven days: longer than any episode or copy-out is meant to take, and far below where the runtimes' clocks
# overflow (--timeout 1e10 ended every episode in an OverflowError).
MAX_SECONDS = 604_800


# Of one failing check's first reason shown in the terminal: a reason may quote a whole tool output.
NOTE_CHARS = 1000


def finite_seconds(value: float) -> float:
    """A --timeout's callback: click's range lets NaN through (every comparison with it is false)."""
    if math.isnan(value):
        raise typer.BadParameter("nan is not a number of seconds")
    return value


def seconds_option(flag: str, what: str) -> Any:
    """A number of seconds from 1 to MAX_SECONDS, NaN refused: `--timeout` and its kin, of `run` and `drift`."""
    return typer.Option(flag, min=1, max=MAX_SECONDS, callback=finite_seconds, help=f"{what} (at most 604800, 7 days).")


def unique_harnesses(harnesses: list[Harness]) -> list[Harness]:
    """Each harness once, in the order first given: a repeat would play its episodes twice into one folder."""
    seen: dict[str, Harness] = {}
    for h in harnesses:
        seen.setdefault(h.name, h)
    return list(seen.values())


def unique_scenarios(scenarios: list[Scenario]) -> list[Scenario]:
    """Each scenario once, in the order first given, by its name (which names its episodes' folders): the same
    scenario twice, by name or by any path to the same content, is one. BadParameter when two different files
    share a name, as neither could be dropped for the other."""
    seen: dict[str, Scenario] = {}
    for sc in scenarios:
        first = seen.setdefault(sc.name, sc)
        if first.sha256 != sc.sha256:
            raise typer.BadParameter(
                f"{first.path} and {sc.path} are two different scenarios named {sc.name!r}, and an episode's "
                "folder is named by its scenario: give one of them",
                param_hint="'--scenario'",
            )
    return list(seen.values())


def warn_unknown_overrides(scenarios: list[Scenario]) -> None:
    """An override for a harness that is not registered here never takes effect: a typo (`refrence: {skip: true}`),
    or a plugin this machine has not installed. Said, not refused: the scenario may be shared with machines that do."""
    known = set(registry())
    for s in scenarios:
        if unknown := sorted(set(s.data["overrides"]) - known):
            log.warning("scenario overrides harnesses not registered here; they take no effect", scenario=s.name,
                        unknown=unknown, known=sorted(known))  # fmt: skip


def parse_harness_args(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--harness-arg")
        if "\x00" in pair:  # it reaches a command line or an image name, neither of which can carry one
            raise typer.BadParameter(f"{key or pair!r} holds a NUL character", param_hint="--harness-arg")
        if key in out:  # the last would win silently: which of two trajectories was meant?
            raise typer.BadParameter(f"{key} is given twice", param_hint="--harness-arg")
        out[key] = value
    return out


def _fail(message: str) -> typer.Exit:
    typer.echo(f"harness-probe: {message}", err=True)
    return typer.Exit(EXIT_ERROR)


def run(
    harness: Annotated[
        list[str],
        typer.Option(
            "--harness",
            "-H",
            help="Harness to probe (repeatable; a repeat is dropped, with a warning); see `harnesses list`.",
        ),
    ],
    output: Annotated[
        Path,
        typer.Option("--output", "-o", help="New directory for the results; an existing one is refused."),
    ],
    scenario: Annotated[
        list[str] | None,
        typer.Option(
            "--scenario",
            "-s",
            help="Scenario name or file (repeatable; default: every scenario). A scenario given twice (by name or "
            "by file) is run once, with a warning.",
        ),
    ] = None,
    harness_arg: Annotated[
        list[str] | None,
        typer.Option("--harness-arg", "-a", help="KEY=VALUE option for the harness preset (repeatable)."),
    ] = None,
    timeout: Annotated[float, seconds_option("--timeout", "Seconds the harness may run before it is killed")] = 300.0,
    collect_max_bytes: Annotated[
        int, typer.Option("--collect-max-bytes", min=0, help="Bytes copied out per episode (logs, native, markers).")
    ] = CollectLimits.max_bytes,
    collect_max_files: Annotated[
        int, typer.Option("--collect-max-files", min=0, help="Files copied out per episode.")
    ] = CollectLimits.max_files,
    collect_timeout: Annotated[
        float, seconds_option("--collect-timeout", "Seconds the copying out of one episode may take")
    ] = CollectLimits.seconds,
    jobs: Annotated[
        int | None,
        typer.Option(
            "--jobs",
            "-j",
            min=1,
            help="Harnesses at once, each episode in its own pod, each collected and checked while the next harness "
            "runs (default: from CPUs and memory; 1 runs the episodes in turn).",
        ),
    ] = None,
    shard: Annotated[
        str | None,
        typer.Option(
            "--shard",
            help="Run only slice I of N (1-based) of the harness x scenario grid; `merge` joins the slices.",
        ),
    ] = None,
    compare_stream: Annotated[
        bool,
        typer.Option(
            "--compare-stream",
            help="Play each scenario a second time with the harness's transport switched (JSON <-> SSE), into "
            "twin/ of its episode, and hold the two rollouts to each other (transport.parity). Harnesses that "
            "cannot be switched (every real one today; the reference can) are played once.",
        ),
    ] = False,
    extra_ca: ExtraCa = None,
    rebuild: Rebuild = False,
    runtime: Runtime = None,
    image_archives: ImageArchives = None,
    harness_version: HarnessVersion = None,
    harness_source: HarnessSource = None,
) -> None:
    """Run each harness x scenario episode in containers and check the harness's self-report against the witness.

    Exit code 0: every episode passes the P0 gate; 1: a check failed; 2: an input or execution error; 130: stopped
    by Ctrl-C or SIGTERM (the episodes it cut short are `interrupted`, the partial summary is marked so).

    Example: harness-probe run -H reference -s tool_success -o out/
    """
    # Unknown harnesses, bad options and scenarios, an output that exists or cannot be made: named input errors
    # (orchestrator.errors), reported by the CLI's root, before any engine is asked.
    given_h: list[Harness] = [get_harness(h, parse_harness_args(harness_arg or [])) for h in harness]
    given_s: list[Scenario] = [load_scenario(s) for s in scenario] if scenario else list_scenarios()
    harnesses, scenarios = unique_harnesses(given_h), unique_scenarios(given_s)
    if len(harnesses) < len(given_h) or len(scenarios) < len(given_s):
        log.warning(
            "repeated harnesses or scenarios dropped: each episode runs once",
            harnesses=[h.name for h in harnesses],
            scenarios=[s.name for s in scenarios],
        )
    warn_unknown_overrides(scenarios)
    try:
        # An empty --shard is refused like any malformed one, never taken for the whole grid.
        shard_of = parse_shard(shard) if shard is not None else None
    except ValueError as exc:
        raise _fail(str(exc)) from None
    check_output(output)
    # A release the registry lacks, a source with nothing to install: named input errors, before any container.
    variants = resolve_variants(harnesses, harness_version, harness_source, extra_ca)
    engine = connect(runtime, image_archives)
    console = Console(stderr=True)
    limits = CollectLimits(collect_max_bytes, collect_max_files, collect_timeout)
    n_jobs = jobs or default_jobs()
    cfg = RunConfig(harnesses, scenarios, output, timeout, build_options(extra_ca, rebuild), limits, n_jobs, shard_of)
    cfg.variants = variants
    cfg.compare_stream = compare_stream
    total = len(harnesses) * len(scenarios)
    if shard_of:
        total = len(shard_slice(range(total), *shard_of))
    root = click.get_current_context().find_root().params
    live = console.is_terminal and str(root.get("log_format", "human")) != "json"

    try:
        with Progress(console, total, n_jobs, live) as progress:
            res = run_suite(cfg, engine, on_episode=progress.on_episode, on_harness_ended=progress.on_harness_ended)
    except RunInterrupted as stop:
        # What finished is shown as it was judged; what the stop cut short is `interrupted`, never a failure.
        print_verdicts(stop.result)
        typer.echo(stop.message(), err=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    print_verdicts(res)
    print_overrides(res.output, variants)
    typer.echo(f"results: {res.output.resolve()}")
    say_why(res.output / "summary.json", res.exit_code)  # e.g. an empty --shard slice: "no episode was run"
    raise typer.Exit(res.exit_code)


def print_verdicts(res: SuiteResult | AuditResult) -> None:
    """One row per episode, failures listed below: report.md and report.html have the check x scenario grid.

    Printed by `run` and by `audit` alike."""
    console = Console(file=sys.stdout)
    table = Table(title="harness-probe verdicts (probe-p0/v1)")
    for col in ("harness", "scenario", "verdict", "execution", "checks ✓ ✗ —"):
        table.add_column(col)
    notes: list[str] = []
    for r in res.results:
        counts = [sum(1 for c in r["checks"] if c["status"] == s) for s in ("pass", "fail", "not_applicable")]
        ex = r["execution"]
        code = "" if ex["exit_code"] is None else f" {ex['exit_code']}"
        styles = {"pass": "green", "fail": "red", "error": "red bold", "skipped": "yellow", "interrupted": "magenta"}
        style = styles.get(r["verdict"], "")
        # An audit's names are its saved folders' (a harness can pick them): shown as text, never as markup.
        table.add_row(
            Text(clean(str(r["harness"]))),
            Text(clean(str(r["scenario"]))),
            Text(str(r["verdict"]), style=style),
            f"{ex['status']}{code} {ex['seconds']:.1f}s",
            " ".join(str(n) for n in counts),
        )
        where = f"{r['harness']}/{r['scenario']}"
        if ex["error"]:
            notes.append(f"{where}: execution: {ex['error']}")
        if r["normalize"]["status"] == "error":
            notes.append(f"{where}: normalize: {r['normalize']['message']}")
        for c in r["checks"]:
            if c["status"] == "fail" and not c["reasons"][0].startswith("blocked"):
                more = f" (+{len(c['reasons']) - 1} more)" if len(c["reasons"]) > 1 else ""
                notes.append(f"{where}: {c['id']}: {c['reasons'][0]}{more}")
    console.print(table)
    for note in notes:
        # Harness text: escapes, never raw; one line each, however long the reason (the results hold all of it).
        shown = clean(note) if len(note) <= NOTE_CHARS else f"{clean(note[:NOTE_CHARS])}… ({len(note):,} characters)"
        console.print(f"  ✗ {shown}", highlight=False, markup=False)
    console.print("the check x scenario table: report.md and report.html in the results directory")
