"""Published runs carry their evidence: packed reproducibly within budget, unpacked as a plain tree only, and
`harness-probe audit` of a published run reproduces its page exactly."""

from __future__ import annotations

import io
import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from orchestrator.cli import app
from orchestrator.report import published
from orchestrator.report.published import (
    ARCHIVE,
    MAX_ARCHIVE_BYTES,
    EvidenceError,
    pack_evidence,
    unpack_evidence,
)
from orchestrator.report.results import published_command, render_results

ROOT = Path(__file__).resolve().parents[3]
RESULTS = ROOT / "docs" / "results"
EPISODE = ROOT / "tests" / "fixtures" / "episodes" / "tool_success"
# The committed results folder's budget: every page, summary and evidence archive of every harness.
RESULTS_BUDGET_BYTES = 40 * 1024 * 1024
PUBLISHED = sorted(p.parent.name for p in RESULTS.glob(f"runs/*/{ARCHIVE}"))


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_results_folder_keeps_to_its_budget() -> None:
    sizes = {p: p.stat().st_size for p in RESULTS.rglob("*") if p.is_file()}
    assert sum(sizes.values()) <= RESULTS_BUDGET_BYTES, sorted(sizes.items(), key=lambda kv: -kv[1])[:5]
    for archive in RESULTS.glob(f"runs/*/{ARCHIVE}"):
        assert archive.stat().st_size <= MAX_ARCHIVE_BYTES, archive


def test_packing_is_reproducible_and_unpacks_to_the_same_tree(tmp_path: Path) -> None:
    run = tmp_path / "run"
    for s in ("tool_success", "retry_429"):
        shutil.copytree(EPISODE, run / "reference" / s)
    (run / "reference" / "tool_success" / "link").symlink_to("/etc/passwd")  # never evidence
    first, second = pack_evidence(run, "reference"), pack_evidence(run, "reference")
    assert first == second
    (tmp_path / ARCHIVE).write_bytes(first)
    unpack_evidence(tmp_path / ARCHIVE, tmp_path / "back")
    (run / "reference" / "tool_success" / "link").unlink()
    assert _tree(tmp_path / "back") == _tree(run)


def test_an_empty_folder_of_the_evidence_is_kept(tmp_path: Path) -> None:
    # Pi's session folder, made and left empty when it was killed before its first turn: its normalizer names the
    # missing session file there, and an archive without the folder made it say the rollout was missing instead.
    run = tmp_path / "run"
    shutil.copytree(EPISODE, run / "reference" / "tool_success")
    (run / "reference" / "tool_success" / "native" / "sessions").mkdir(parents=True)
    (tmp_path / ARCHIVE).write_bytes(pack_evidence(run, "reference"))
    unpack_evidence(tmp_path / ARCHIVE, tmp_path / "back")
    assert (tmp_path / "back" / "reference" / "tool_success" / "native" / "sessions").is_dir()
    assert _tree(tmp_path / "back") == _tree(run)


def _archive(path: Path, *members: tarfile.TarInfo) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for m in members:
            tar.addfile(m, io.BytesIO(b"x" * m.size) if m.isfile() else None)
    return path


@pytest.mark.parametrize(
    ("name", "kind", "why"),
    [
        ("../escape.txt", tarfile.REGTYPE, "not a plain relative path"),
        ("/abs.txt", tarfile.REGTYPE, "not a plain relative path"),
        ("h/s/link", tarfile.SYMTYPE, "not a regular file"),
        ("h/s/fifo", tarfile.FIFOTYPE, "not a regular file"),
    ],
)
def test_an_archive_that_is_not_a_plain_tree_is_refused(tmp_path: Path, name: str, kind: bytes, why: str) -> None:
    member = tarfile.TarInfo(name)
    member.type = kind
    member.size = 1 if kind == tarfile.REGTYPE else 0
    if kind == tarfile.SYMTYPE:
        member.linkname = "/etc/passwd"
    with pytest.raises(EvidenceError, match=why):
        unpack_evidence(_archive(tmp_path / "a.tar.gz", member), tmp_path / "out")
    assert not (tmp_path / "escape.txt").exists()


def test_a_member_twice_is_refused(tmp_path: Path) -> None:
    a, b = tarfile.TarInfo("h/s/f"), tarfile.TarInfo("h/s/f")
    a.size = b.size = 1
    with pytest.raises(EvidenceError, match="appears twice"):
        unpack_evidence(_archive(tmp_path / "a.tar.gz", a, b), tmp_path / "out")


def test_the_page_shows_the_command_without_the_machines_output_path() -> None:
    made = "harness-probe run -H codex -o /tmp/pytest-of-root/pytest-188/codex0/out --jobs 2"
    assert published_command(made) == "harness-probe run -H codex -o OUT --jobs 2"
    assert published_command("harness-probe run --output=/tmp/x -H pi") == "harness-probe run --output=OUT -H pi"
    for page in RESULTS.glob("*.md"):
        assert "/tmp/" not in page.read_text(), page


@pytest.mark.parametrize("harness", PUBLISHED)
def test_an_audit_of_a_published_run_reproduces_its_page(harness: str, tmp_path: Path) -> None:
    # -H: the rollouts are normalized again from the published native logs, as the run made them.
    source = str(RESULTS / "runs" / harness)
    res = CliRunner().invoke(app, ["audit", source, "-H", harness, "-o", str(tmp_path / "audited")])
    assert res.exit_code in (0, 1), res.output
    if (marker := RESULTS / "runs" / harness / "audited").is_file():
        # A run published after an offline re-check says so on its page, as `results publish` recorded it.
        (tmp_path / "audited" / "audited").write_bytes(marker.read_bytes())
    page = render_results(tmp_path / "audited", harness, f"harness-probe results render {harness}")
    assert page == (RESULTS / f"{harness}.md").read_text()


def test_every_published_run_carries_its_evidence() -> None:
    # A page without its evidence is a claim nobody can re-check: every saved run has its archive.
    saved = sorted(p.parent.name for p in RESULTS.glob("runs/*/summary.json"))
    assert "reference" in saved and saved == PUBLISHED


def test_a_pax_header_larger_than_the_caps_is_refused_before_it_is_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # tarfile reads a pax header whole before any size is known: a 7 MB archive held a 1 GiB one (4.45 GB RSS).
    monkeypatch.setattr(published._Capped, "LIMIT", 64 * 1024)
    member = tarfile.TarInfo("h/s/f")
    member.size = 1
    member.pax_headers = {"comment": "x" * (256 * 1024)}
    with tarfile.open(tmp_path / "a.tar.gz", "w:gz", format=tarfile.PAX_FORMAT) as tar:
        tar.addfile(member, io.BytesIO(b"x"))
    read: list[int] = []
    real = published._Capped.read

    def counting(self: Any, size: int = -1) -> bytes:
        chunk: bytes = real(self, size)
        read.append(len(chunk))
        return chunk

    monkeypatch.setattr(published._Capped, "read", counting)
    with pytest.raises(EvidenceError, match="unpacks past 65,536 bytes"):
        unpack_evidence(tmp_path / "a.tar.gz", tmp_path / "out")
    assert sum(read) <= 64 * 1024 + (1 << 20)  # stopped at the cap, give or take one read


def test_a_member_is_written_a_piece_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    member = tarfile.TarInfo("h/s/big")
    member.size = 3 << 20
    asked: list[int] = []
    real = tarfile.ExFileObject.read

    def read(self: Any, size: int | None = -1) -> bytes:
        asked.append(-1 if size is None else size)
        return real(self, size)

    monkeypatch.setattr(tarfile.ExFileObject, "read", read)
    unpack_evidence(_archive(tmp_path / "a.tar.gz", member), tmp_path / "out")
    assert (tmp_path / "out" / "h" / "s" / "big").stat().st_size == 3 << 20
    assert asked and max(asked) <= 1 << 20 and -1 not in asked  # never the whole member in one read
