"""`harness-probe results`: publish a run's measured results under docs/results/, and regenerate the pages."""

from __future__ import annotations

import glob
import os
import shutil
from pathlib import Path
from typing import Annotated, Any

import click
import typer

from orchestrator.errors import OutputUnwritable
from orchestrator.evidence import FormatError, load_json, validate
from orchestrator.evidence.jsonread import JsonFault, loads, read_below, read_json
from orchestrator.output import write_output_file
from orchestrator.paths import is_plain_name
from orchestrator.resources import checkout_root

app = typer.Typer(
    help="Measured results pages under docs/results/ (generated, never hand-written).", no_args_is_help=True
)

# Published pages belong to this project's checkout. An installed tool has none: it refuses rather than write this
# project's pages into ./docs/results/ of whatever directory it runs in, unless --docs names the folder.
REPO_ROOT: Path | None = checkout_root()
DOCS: Path | None = REPO_ROOT / "docs" / "results" if REPO_ROOT else None

DocsDir = Annotated[
    Path | None,
    typer.Option(
        "--docs",
        file_okay=False,
        help="The results folder (it holds runs/ and the pages). Default: docs/results/ of this checkout; an "
        "installed tool has no checkout and needs it.",
    ),
]


def _docs(docs: Path | None) -> Path:
    if docs is not None:
        return docs
    if DOCS is None:
        typer.echo(
            "harness-probe: not run from a harness-probe checkout, so there is no docs/results/ to write; give "
            "--docs DIR (a folder of results pages of your own)",
            err=True,
        )
        raise typer.Exit(2)
    return DOCS


# What a page is rendered from: small enough to commit, enough to regenerate the page and the matrix.
_SAVED = ("summary.json", "suite.json")


def _write(path: Path, text: str) -> None:
    # A page planted as a link would be written through, onto whatever file it points at.
    if os.path.islink(path):
        raise OutputUnwritable(f"results page {path} cannot be written: it is a link; not written through")
    write_output_file(path, text, "results page", parents=True)
    typer.echo(f"wrote {path.relative_to(REPO_ROOT) if REPO_ROOT and path.is_relative_to(REPO_ROOT) else path}")


def _plain(harness: str) -> str:
    # The name is a file and a folder under docs/results/: `..` there would write (and remove) elsewhere.
    if not is_plain_name(harness):
        typer.echo(f"harness-probe: {harness!r} is not a harness name (one plain folder name)", err=True)
        raise typer.Exit(2)
    return harness


def _render(harness: str, docs: Path) -> None:
    from orchestrator.report.results import render_results  # loaded on use: `run` needs none of it

    saved = docs / "runs" / _plain(harness)
    if not (saved / "summary.json").is_file():
        known = ", ".join(sorted(p.parent.name for p in (docs / "runs").glob("*/summary.json"))) or "none"
        typer.echo(f"harness-probe: no saved run of {harness!r} in {saved.parent} (saved: {known})", err=True)
        raise typer.Exit(2)
    regenerate = f"harness-probe results render {harness}"
    try:
        page = render_results(saved, harness, regenerate)
    except (FormatError, JsonFault) as exc:  # JsonFault: a runtime.json that is not JSON
        typer.echo(f"harness-probe: the saved run of {harness!r} cannot be read: {exc}", err=True)
        raise typer.Exit(2) from None
    _write(docs / f"{harness}.md", page)


def _saved_as(slot: str, summary: bytes, harness: str, docs: Path) -> Path:
    """Where the run is saved: runs/HARNESS/ for the pinned run, runs/HARNESS/newest/ for a newest release's run,
    which must be a run of another release (its override record says which) beside a pinned run already saved."""
    from orchestrator.report.overrides import overrides_of
    from orchestrator.report.side_by_side import NEWEST

    override = overrides_of(loads(summary)).get(harness)
    pinned = docs / "runs" / harness
    if slot == "pinned":
        if override is not None:
            kind = "another release" if override["kind"] == "version" else "a local source"
            why = f"the run probed {kind} of {harness!r}, not its pin"
            hint = "; publish it with --as newest" if override["kind"] == "version" else ""
            raise _refuse(f"{why}: it is not published as the pinned results{hint}")
        return pinned
    if harness == NEWEST:
        raise _refuse(f"a harness named {NEWEST!r} has no newest slot (its runs/{NEWEST}/{NEWEST}/ is its own)")
    if override is None or override["kind"] != "version":
        what = "its pin" if override is None else "a local source"
        raise _refuse(f"the run probed {what} of {harness!r}, not another release (run it with --harness-version)")
    if os.path.islink(pinned) or not (pinned / "summary.json").is_file():
        raise _refuse(f"{harness!r} has no pinned run saved in {pinned} to show the newest beside; publish it first")
    return pinned / NEWEST


def _refuse(message: str) -> typer.Exit:
    typer.echo(f"harness-probe: {message}", err=True)
    return typer.Exit(2)


@app.command("publish")
def publish(
    run_dir: Annotated[Path, typer.Argument(exists=True, file_okay=False, help="A finished run directory.")],
    harness: Annotated[str, typer.Option("--harness", "-H", help="The harness whose results to publish.")],
    slot: Annotated[
        str,
        typer.Option(
            "--as",
            click_type=click.Choice(["pinned", "newest"]),
            help="pinned: the run of the harness's pin (replaces runs/HARNESS/, a newest run saved there too). "
            "newest: a run of another release (`run --harness-version`, as `drift` makes), saved in "
            "runs/HARNESS/newest/ beside the pinned run; the page then shows both side by side.",
        ),
    ] = "pinned",
    docs_dir: DocsDir = None,
) -> None:
    """Save a run into docs/results/runs/HARNESS/ (summary, evidence); render docs/results/HARNESS.md and the matrix.

    The evidence (every episode's witness, rollout, native logs, scenario, markers and result) goes into one
    evidence.tar.gz, at most 6 MiB; `harness-probe audit docs/results/runs/HARNESS -H HARNESS -o DIR` re-checks it.

    Example: harness-probe results publish out/ -H reference

    Example: harness-probe results publish drift-pi/0.80.2 -H pi --as newest
    """
    if not (run_dir / "summary.json").is_file():
        typer.echo(f"harness-probe: {run_dir} has no summary.json (an interrupted run certifies nothing)", err=True)
        raise typer.Exit(2)
    if not (run_dir / "suite.json").is_file():
        typer.echo(f"harness-probe: {run_dir} has no suite.json (not a run directory)", err=True)
        raise typer.Exit(2)
    # Everything is checked before the saved results are replaced: a wrong run directory loses nothing.
    docs = _docs(docs_dir)
    _plain(harness)
    inside, run_at = docs.resolve(), run_dir.resolve()
    if inside == run_at or run_at in inside.parents:
        # Its pages and saved copy would be written into the run being published (audit, export, merge refuse too).
        typer.echo(f"harness-probe: --docs {docs} is inside the run {run_dir}: choose a folder outside it", err=True)
        raise typer.Exit(2)
    try:
        summary = load_json(run_dir / "summary.json", "probe-summary/v1")
    except FormatError as exc:
        typer.echo(f"harness-probe: {exc}", err=True)
        raise typer.Exit(2) from None
    if "interrupted" in summary:
        typer.echo(f"harness-probe: {run_dir} was interrupted (its summary is partial): it certifies nothing", err=True)
        raise typer.Exit(2)
    probed = [h["name"] for h in summary["harnesses"]]
    runtimes = sorted(run_dir.glob(f"{glob.escape(harness)}/*/runtime.json"))
    if harness not in probed:
        typer.echo(f"harness-probe: the run has no episode of {harness!r} (it probed: {', '.join(probed)})", err=True)
        raise typer.Exit(2)
    if not runtimes:
        typer.echo(f"harness-probe: {run_dir} holds no {harness}/*/runtime.json: no episode of it was saved", err=True)
        raise typer.Exit(2)
    # Every file is read before anything is removed, each a regular file reached without a link (no host file
    # lands in the repository through a planted link): a refusal leaves the saved results as they were.
    try:
        saved = {name: read_below(run_dir, (name,)) for name in _SAVED}
        runtime = read_below(run_dir, runtimes[0].relative_to(run_dir).parts)
        for name, fmt in (("suite.json", "suite/v1"), ("summary.json", "probe-summary/v1")):
            validate(loads(saved[name]), fmt, name)
        loads(runtime)  # JSON, strictly read: what the page renders from
    except (JsonFault, FormatError) as exc:
        typer.echo(f"harness-probe: {exc}", err=True)
        raise typer.Exit(2) from None
    dest = _saved_as(slot, saved["summary.json"], harness, docs)
    from orchestrator.report.published import ARCHIVE, EvidenceError, pack_evidence

    try:
        evidence = pack_evidence(run_dir, harness)  # before anything saved is replaced: over budget loses nothing
    except (EvidenceError, OSError) as exc:
        typer.echo(f"harness-probe: the run's evidence cannot be published: {exc}", err=True)
        raise typer.Exit(2) from None
    if os.path.islink(dest):
        typer.echo(f"harness-probe: {dest} is a link; not replaced", err=True)
        raise typer.Exit(2)
    if slot == "pinned" and harness != "newest" and (dest / "newest").is_dir():
        # A newest run beside an older pinned run would be shown beside one it was never compared with.
        typer.echo(f"removed {dest / 'newest'}, saved beside the old pinned run; publish it again with --as newest")
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for name, data in saved.items():
        (dest / name).write_bytes(data)
    if (run_dir / "audit.json").is_file():
        # The run was re-checked offline: say so on the page (the source paths in it are not kept).
        (dest / "audited").write_text("re-checked offline by `harness-probe audit` with the current checks\n")
    (dest / harness).mkdir()
    (dest / harness / "runtime.json").write_bytes(runtime)
    # Every episode's witness, rollout, native logs and scenario: `harness-probe audit` of dest re-checks them.
    (dest / ARCHIVE).write_bytes(evidence)
    _render(harness, docs)
    if slot == "pinned":  # the matrix lists pinned runs only
        matrix(docs)


@app.command("render")
def render(
    harness: Annotated[str, typer.Argument(help="A harness with a saved run in docs/results/runs/.")],
    docs_dir: DocsDir = None,
) -> None:
    """Regenerate docs/results/HARNESS.md from its saved run.

    Example: harness-probe results render reference
    """
    _render(harness, _docs(docs_dir))


@app.command("matrix")
def matrix(docs_dir: DocsDir = None) -> None:
    """Regenerate docs/results/README.md: every probed harness x evidence label E1-E10.

    Example: harness-probe results matrix
    """
    from orchestrator.report.results import label_matrix

    docs = _docs(docs_dir)
    if not (docs / "runs").is_dir():
        # A mistyped --docs would otherwise get a new folder holding an empty matrix, and exit 0.
        raise _refuse(f"{docs} is not a results folder: it has no runs/ folder of saved runs (`results publish`)")
    summaries: dict[str, dict[str, Any]] = {}
    for saved in sorted((docs / "runs").glob("*/summary.json")):
        name = saved.parent.name
        runtime = next(iter(sorted(saved.parent.glob(f"{name}/runtime.json"))), None)
        # Read as `results render` reads them: strictly, and a file that cannot be used is named, never a crash.
        try:
            summary = load_json(saved, "probe-summary/v1")
            record = read_json(runtime) if runtime else {}
        except FormatError as exc:
            raise _refuse(f"the saved run of {name!r} cannot be read: {exc}") from None
        except JsonFault as exc:
            raise _refuse(f"the saved run of {name!r} cannot be read: {runtime} is not valid: {exc}") from None
        probed = record.get("harness") if isinstance(record, dict) else None
        version = probed.get("version") if isinstance(probed, dict) else None
        if name not in (h["name"] for h in summary["harnesses"]):
            raise _refuse(f"the saved run of {name!r} cannot be read: {saved} has no results for {name!r}")
        summaries[name] = {"summary": summary, "version": version}
    _write(docs / "README.md", label_matrix(summaries))
