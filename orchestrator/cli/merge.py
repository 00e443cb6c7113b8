"""`harness-probe merge`: join shard outputs into one run directory with one summary.json and reports."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from orchestrator.cli.common import say_why
from orchestrator.output import refuse_output_in_sources


def merge_command(
    sources: Annotated[
        list[Path], typer.Argument(exists=True, file_okay=False, help="Run directories (e.g. each `--shard I/N`).")
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="New directory for the merged run.")],
) -> None:
    """Copy every episode of SOURCES into OUTPUT and write one summary.json, report.md, report.html, junit.xml.

    Refuses overlapping inputs (an episode or shard twice: OverlappingShards), inputs that measured different
    things (profile, harness-probe version, scenario, image id or harness options: InconsistentShards) and
    unfinished runs (IncompleteShard), and shards holding what no run writes (a link, FIFO, device, over-cap or
    too-deep file: UnsafeShard). Exit code as `run`: 0 pass, 1 a check failed, 2 an error or a missing episode, 130
    when a shard was interrupted (its partial summary is merged, and the merged run says so).
    The summary is rebuilt from each episode's scenario_result.json, whose verdicts are taken as the run wrote
    them: `harness-probe audit OUTPUT` judges the merged evidence again.

    Example: harness-probe merge shard1/ shard2/ -o merged/
    """
    from orchestrator.merge import merge_runs  # loaded on use: `run` needs none of it

    refuse_output_in_sources(output, sources)  # a BadOption, before anything is read or written
    res = merge_runs(sources, output)  # a MergeError or OutputExists is the CLI root's to report, named
    typer.echo(f"merged {len(res.results)} episode(s) from {len(sources)} run(s): {res.output.resolve()}")
    say_why(res.output / "summary.json", res.exit_code)
    raise typer.Exit(res.exit_code)
