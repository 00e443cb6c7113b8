"""`harness-probe ci select|report`: what a change must probe; the "Harness conformance P0" check from its outputs."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path
from typing import Annotated, BinaryIO

import click
import typer

from orchestrator.evidence import validate
from orchestrator.evidence.text import clean
from orchestrator.harnesses import HARNESSES, IMAGE_FROM_OPTIONS
from orchestrator.output import check_output_file, write_output_file
from orchestrator.resources import checkout_root
from orchestrator.runtime.select import RUNTIMES

app = typer.Typer(no_args_is_help=True, help="CI helpers: select affected harnesses, publish the P0 check.")

EXIT_ERROR = 2


# A change list names a repository's paths, a line each: far under this even for a repository's every file.
MAX_CHANGE_LIST = 16 << 20


def _change_list(path: Path) -> bytes:
    """A --changed-file's bytes: a regular file (a FIFO would be waited on for ever, /dev/zero read until the
    memory ends), at most MAX_CHANGE_LIST."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            raise _fail(f"--changed-file {path}: not a regular file (a FIFO, device or socket)")
        with path.open("rb") as f:
            return _bounded(f, f"--changed-file {path}")
    except OSError as exc:
        raise _fail(f"--changed-file {path}: cannot be read ({exc.strerror or exc})") from None


def _bounded(stream: BinaryIO, where: str) -> bytes:
    """At most MAX_CHANGE_LIST bytes of a change list; more is no change list, and is named."""
    text = stream.read(MAX_CHANGE_LIST + 1)
    if len(text) > MAX_CHANGE_LIST:
        raise _fail(f"{where}: more than {MAX_CHANGE_LIST} bytes of changed paths; not a change list")
    return text


def _fail(message: str) -> typer.Exit:
    typer.echo(f"harness-probe: {message}", err=True)
    return typer.Exit(EXIT_ERROR)


def _probed() -> list[str]:
    # What CI can probe unconfigured: every registered harness but those whose image is a run's option.
    return sorted(h for h in HARNESSES if h not in IMAGE_FROM_OPTIONS)


def _harness_images() -> dict[str, str]:
    # The registry names adapters lazily; their image folder equals their name for every registered harness,
    # and reading the class here would import every adapter. A mismatch is caught by a unit test.
    return {h: h for h in _probed()}


@app.command("select")
def select_command(
    base: Annotated[
        str | None, typer.Option("--base", help="Git ref to diff against (merge base ... HEAD), e.g. origin/main.")
    ] = None,
    changed_file: Annotated[
        list[Path] | None,
        typer.Option("--changed-file", exists=True, dir_okay=False, help="File listing changed paths, one a line."),
    ] = None,
    all_harnesses: Annotated[bool, typer.Option("--all", help="Select every harness (schedule, manual runs).")] = False,
    extra_runtime: Annotated[
        list[str] | None,
        typer.Option(
            "--extra-runtime",
            click_type=click.Choice(RUNTIMES),
            help="Also probe the reference harness under this runtime (repeatable).",
        ),
    ] = None,
    github_output: Annotated[
        Path | None,
        typer.Option("--github-output", help="Append `harnesses=` and `matrix=` lines here (e.g. $GITHUB_OUTPUT)."),
    ] = None,
    repo: Annotated[
        Path | None,
        typer.Option("--repo", help="Repository root for --base and image parents (default: this checkout, else .)."),
    ] = None,
) -> None:
    """Print the harnesses to probe as JSON (ci-selection/v1): harness files select that harness, shared code
    and dependencies select all, documentation selects none. With neither --base nor --changed-file nor --all,
    paths are read from stdin (from a terminal, none are: that is refused, not waited on).

    Example: harness-probe ci select --base origin/main
    """
    from orchestrator.ci.select import GitError, changed_paths, image_parents, read_change_list, select  # on use

    if github_output:
        check_output_file(github_output, "--github-output file")  # before the selection is printed
    if repo is not None and not repo.is_dir():
        raise _fail(f"--repo {repo}: no such folder")
    repo = repo or checkout_root() or Path.cwd()
    paths: list[str] = []
    if all_harnesses:
        paths = []
    elif base:
        try:
            paths = changed_paths(base, repo)
        except GitError as exc:
            raise _fail(str(exc)) from None
    else:
        try:
            for listing in changed_file or []:
                paths += read_change_list(_change_list(listing), str(listing))
            if not changed_file:
                if sys.stdin.isatty():  # a user at a terminal would wait on nothing said
                    raise _fail("nothing to select from: give --base REF, --changed-file FILE or --all, or pipe the "
                                "changed paths on stdin")  # fmt: skip
                paths = read_change_list(_bounded(sys.stdin.buffer, "stdin"), "stdin")
        except GitError as exc:
            raise _fail(str(exc)) from None
    sel = select(paths, _probed(), images=_harness_images(), parents=image_parents(repo))
    if all_harnesses:
        sel.harnesses, sel.all = _probed(), True
    legs = [{"harness": h, "runtime": "docker"} for h in sel.harnesses]
    if "reference" in sel.harnesses:
        legs += [{"harness": "reference", "runtime": r} for r in extra_runtime or [] if r != "docker"]
    out = {"schema": "ci-selection/v1", **sel.to_json(), "matrix": {"include": legs}}
    validate(out, "ci-selection/v1", "selection")
    typer.echo(json.dumps(out, indent=2, sort_keys=True))
    if github_output:
        lines = f"harnesses={json.dumps(sel.harnesses)}\nmatrix={json.dumps(out['matrix'])}\n"
        write_output_file(github_output, lines, "--github-output file", mode="a")


@app.command("report")
def report_command(
    dirs: Annotated[
        list[Path] | None,
        typer.Argument(help="Probe outputs: run directories, or CI leg folders (leg.json + run/)."),
    ] = None,
    expect: Annotated[
        list[str] | None, typer.Option("--expect", help="A harness that must have a result (repeatable).")
    ] = None,
    expect_json: Annotated[
        str | None,
        typer.Option(
            "--expect-json",
            help="JSON list of harness names (ci select's `harnesses`) or of legs (its `matrix.include`).",
        ),
    ] = None,
    artifact_url: Annotated[
        str | None,
        typer.Option("--artifact-url", help="Evidence link; {harness}, {runtime} and {dir} are filled in per row."),
    ] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Also write the Markdown here.")] = None,
    check_json: Annotated[
        Path | None, typer.Option("--check-json", help="Write a GitHub check-run body (name, conclusion, output).")
    ] = None,
) -> None:
    """Print the check as Markdown: per harness pass / fail / unavailable, failed scenarios, the first failure,
    a local rerun command and the evidence link.

    Exit code 0: every harness passes; 1: a harness failed a check; 2: a measurement is unavailable (a probe
    exited 2, was cancelled, or left no summary), never a pass.

    The verdicts are the ones each run's summary.json states (strictly read), not judged again from the evidence:
    `harness-probe audit DIR` re-checks a run's evidence with the current checks.

    Example: harness-probe ci report out/
    """
    from orchestrator.ci.report import check_run, collect, dumps, exit_code, render_markdown  # loaded on use

    # Both files are checked before any is written: a wrong second path leaves no half of the outputs behind.
    for path, what in ((output, "--output file"), (check_json, "--check-json file")):
        if path:
            check_output_file(path, what)
    expected: list[str | tuple[str, str]] = list(expect or [])
    if expect_json:
        try:
            listed = json.loads(expect_json)
        except json.JSONDecodeError as exc:
            raise _fail(f"--expect-json is not JSON: {exc}") from None
        if not isinstance(listed, list):
            raise _fail("--expect-json must be a JSON list")
        for x in listed:
            if isinstance(x, str):
                expected.append(x)
            elif isinstance(x, dict) and isinstance(x.get("harness"), str) and isinstance(x.get("runtime"), str):
                expected.append((x["harness"], x["runtime"]))
            else:
                raise _fail("--expect-json items are harness names or matrix legs {harness, runtime}")
    rows = collect(list(dirs or []), expected)
    missing_dirs = [d for d in dirs or [] if not d.is_dir()]
    if missing_dirs:
        typer.echo(f"harness-probe: not a directory: {', '.join(map(str, missing_dirs))}", err=True)
    # The summaries' text is a harness's: cleaned, and the files written before anything is printed.
    markdown = clean(render_markdown(rows, artifact_url))
    if output:
        write_output_file(output, markdown, "--output file")
    if check_json:
        write_output_file(check_json, dumps(check_run(rows, markdown)), "--check-json file")
    typer.echo(markdown, nl=False)
    code = exit_code(rows)
    if missing_dirs:
        code = max(code, EXIT_ERROR)
    raise typer.Exit(code)
