"""`harness-probe drift`: probe a harness's newest (or a named) release beside its pin and print what changed."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from orchestrator.cli.common import ExtraCa, Runtime, build_options, connect
from orchestrator.cli.run import seconds_option, unique_scenarios
from orchestrator.cli.run_variant import resolve_variants
from orchestrator.errors import EXIT_ERROR, BuildError, OutputExists
from orchestrator.evidence import FormatError
from orchestrator.harnesses import get_harness
from orchestrator.images import default_extra_ca, image_folder
from orchestrator.parallel import default_jobs
from orchestrator.scenarios import list_scenarios, load_scenario
from orchestrator.suite import RunConfig, run_suite
from orchestrator.variants import RegistryError, VariantError, newest_version, package_of, pinned_version
from orchestrator.variants.drift import DriftReport, compare_runs

__all__ = ["drift_command"]


def _fail(message: str) -> typer.Exit:
    typer.echo(f"harness-probe: {message}", err=True)
    return typer.Exit(EXIT_ERROR)


def _print(report: DriftReport, pinned: str, other: str) -> None:
    typer.echo(f"drift of {report.harness}: pin {pinned} -> {other}")
    for scenario, (was, now) in report.verdicts.items():
        mark = "" if was == now else "  (changed)"
        typer.echo(f"  {scenario}: verdict {was} -> {now}{mark}")
        for c in (c for c in report.changes if c.scenario == scenario):
            flag = "  REGRESSION" if c.regression and c.tier == "P0" else ""
            typer.echo(f"    {c.check} [{c.tier}]: {c.before} -> {c.after}{flag}")
    for err in report.errors:
        typer.echo(f"  error: {err}")
    n = len(report.p0_regressions)
    typer.echo(f"{len(report.changes)} check(s) changed status, {n} P0 regression(s)")


def drift_command(
    harness: Annotated[str, typer.Option("--harness", "-H", help="Harness whose pin is compared with a release.")],
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="New directory for both runs (DIR/pinned, DIR/<version>)."),
    ] = None,
    against: Annotated[
        str | None, typer.Option("--against", help="Release to compare with (default: the registry's newest).")
    ] = None,
    scenario: Annotated[
        list[str] | None,
        typer.Option("--scenario", "-s", help="Scenario name or file (repeatable; default: every scenario)."),
    ] = None,
    pinned_run: Annotated[
        Path | None,
        typer.Option("--pinned-run", exists=True, file_okay=False, help="Compare this existing run of the pin..."),
    ] = None,
    other_run: Annotated[
        Path | None,
        typer.Option("--other-run", exists=True, file_okay=False, help="...with this existing run (no probing)."),
    ] = None,
    timeout: Annotated[float, seconds_option("--timeout", "Seconds a harness may run")] = 300.0,
    jobs: Annotated[int | None, typer.Option("--jobs", "-j", min=1, help="Episodes at once.")] = None,
    extra_ca: ExtraCa = None,
    runtime: Runtime = None,
) -> None:
    """Probe the registry's newest release (or --against VERSION) beside the pin; print the checks whose status
    changed per scenario.

    Exit code 0: no P0 check regressed; 1: a P0 check that did not fail at the pin fails now; 2: an error.

    Example: harness-probe drift -H pi --against 0.72.1 -s tool_success
    """
    if against == "":
        # Not "the newest": an empty value (an unset shell variable) is a mistake, named before any registry is asked.
        raise typer.BadParameter(
            "is empty; give a release version, or leave --against out for the newest", param_hint="'--against'"
        )
    if (pinned_run is None) != (other_run is None):
        raise _fail("give both --pinned-run and --other-run (to compare two saved runs), or neither")
    if pinned_run is not None and other_run is not None:
        report = compare_runs(harness, pinned_run, other_run)
        _print(report, str(pinned_run), str(other_run))
        raise typer.Exit(report.exit_code)
    try:
        h = get_harness(harness)
        # A scenario given twice would be played twice into one episode folder.
        scenarios = unique_scenarios([load_scenario(s) for s in scenario] if scenario else list_scenarios())
        pkg = package_of(h.image)
        if pkg is None:
            raise VariantError(f"harness {harness!r} has no registry release to drift to")
        pin = pinned_version(image_folder(h.image), pkg) or "?"
        target = against or newest_version(pkg, extra_ca or default_extra_ca())
        if target == pin:
            typer.echo(f"{harness}: the registry's newest release of {pkg.name} is the pin ({pin}); no drift")
            raise typer.Exit(0)
        other_h = get_harness(harness)
        variants = resolve_variants([other_h], [target], None, extra_ca)
    except (KeyError, ValueError, FormatError, RegistryError) as exc:
        # A KeyError's str() is the repr of its message; its message itself is said, quotes inside it kept.
        raise _fail(str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)) from None
    if output is None:
        raise _fail("--output DIR is needed to probe (or compare saved runs with --pinned-run/--other-run)")
    if output.exists():
        raise _fail(f"output directory {output} already exists; choose a new one (results are never mixed)")
    engine = connect(runtime)
    build = build_options(extra_ca, False)
    n = jobs or default_jobs()
    pinned_dir, other_dir = output / "pinned", output / target
    try:
        output.mkdir(parents=True)
        run_suite(RunConfig([h], scenarios, pinned_dir, timeout, build, jobs=n), engine)
        run_suite(RunConfig([other_h], scenarios, other_dir, timeout, build, jobs=n, variants=variants), engine)
    except (OutputExists, BuildError) as exc:
        raise _fail(str(exc)) from None
    report = compare_runs(harness, pinned_dir, other_dir)
    _print(report, pin, target)
    typer.echo(f"results: {output.resolve()}")
    raise typer.Exit(report.exit_code)
