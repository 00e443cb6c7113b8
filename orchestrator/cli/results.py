"""`harness-probe results`: publish a run's measured results under docs/results/, and regenerate the pages."""

from __future__ import annotations

import glob
import json
import os
import shutil
from pathlib import Path
from typing import Annotated, Any

import typer

from orchestrator.evidence import FormatError, load_json, validate
from orchestrator.evidence.jsonread import JsonFault, loads, read_bytes
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


def _read_plain(root: Path, parts: tuple[str, ...]) -> bytes:
    """A file below root, each folder on the way and the file itself reached without following a link."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            try:
                nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except OSError as exc:
                why = f"{part} is not a folder reached without a link ({exc.strerror})"
                raise JsonFault(f"{'/'.join(parts)}: {why}") from None
            os.close(fd)
            fd = nxt
        try:
            return read_bytes(parts[-1], dir_fd=fd)
        except JsonFault as exc:
            raise JsonFault(f"{'/'.join(parts)}: {exc}") from None
    finally:
        os.close(fd)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
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
    except FormatError as exc:
        typer.echo(f"harness-probe: the saved run of {harness!r} cannot be read: {exc}", err=True)
        raise typer.Exit(2) from None
    _write(docs / f"{harness}.md", page)


@app.command("publish")
def publish(
    run_dir: Annotated[Path, typer.Argument(exists=True, file_okay=False, help="A finished run directory.")],
    harness: Annotated[str, typer.Option("--harness", "-H", help="The harness whose results to publish.")],
    docs_dir: DocsDir = None,
) -> None:
    """Save a run into docs/results/runs/HARNESS/ (summary, evidence); render docs/results/HARNESS.md and the matrix.

    The evidence (every episode's witness, rollout, native logs, scenario, markers and result) goes into one
    evidence.tar.gz, at most 6 MiB; `harness-probe audit docs/results/runs/HARNESS -H HARNESS -o DIR` re-checks it.

    Example: harness-probe results publish out/ -H reference
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
    try:
        probed = [h["name"] for h in load_json(run_dir / "summary.json", "probe-summary/v1")["harnesses"]]
    except FormatError as exc:
        typer.echo(f"harness-probe: {exc}", err=True)
        raise typer.Exit(2) from None
    runtimes = sorted(run_dir.glob(f"{glob.escape(harness)}/*/runtime.json"))
    if harness not in probed or not runtimes:
        typer.echo(f"harness-probe: the run has no episode of {harness!r} (it probed: {', '.join(probed)})", err=True)
        raise typer.Exit(2)
    # Every file is read before anything is removed, each a regular file reached without a link (no host file
    # lands in the repository through a planted link): a refusal leaves the saved results as they were.
    try:
        saved = {name: _read_plain(run_dir, (name,)) for name in _SAVED}
        runtime = _read_plain(run_dir, runtimes[0].relative_to(run_dir).parts)
        for name, fmt in (("suite.json", "suite/v1"), ("summary.json", "probe-summary/v1")):
            validate(loads(saved[name]), fmt, name)
        loads(runtime)  # JSON, strictly read: what the page renders from
    except (JsonFault, FormatError) as exc:
        typer.echo(f"harness-probe: {exc}", err=True)
        raise typer.Exit(2) from None
    from orchestrator.report.published import ARCHIVE, EvidenceError, pack_evidence

    try:
        evidence = pack_evidence(run_dir, harness)  # before anything saved is replaced: over budget loses nothing
    except (EvidenceError, OSError) as exc:
        typer.echo(f"harness-probe: the run's evidence cannot be published: {exc}", err=True)
        raise typer.Exit(2) from None
    dest = docs / "runs" / harness
    if os.path.islink(dest):
        typer.echo(f"harness-probe: {dest} is a link; not replaced", err=True)
        raise typer.Exit(2)
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
    summaries: dict[str, dict[str, Any]] = {}
    for saved in sorted((docs / "runs").glob("*/summary.json")):
        name = saved.parent.name
        runtime = next(iter(sorted(saved.parent.glob(f"{name}/runtime.json"))), None)
        version = json.loads(runtime.read_text())["harness"]["version"] if runtime else None
        summaries[name] = {"summary": json.loads(saved.read_text()), "version": version}
    _write(docs / "README.md", label_matrix(summaries))
