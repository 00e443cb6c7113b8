"""Temporary folders a killed run left are swept; nothing that is not surely a dead process's own is touched."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from orchestrator.cli import app
from orchestrator.cli import cleanup as cleanup_cli
from orchestrator.harnesses.isolated import Normalizer
from orchestrator.harnesses.reference import ReferenceHarness
from orchestrator.runtime.spec import Owner
from orchestrator.tempdirs import KINDS, OWNER_FILE, owned_tempdir, sweep_tempdirs

ROOT = Path(__file__).resolve().parents[3]


def _killed_runs_folders(tmp: Path, *prefixes: str) -> list[Path]:
    """Folders made by a process that then ended without removing them (as SIGKILL leaves them)."""
    code = (
        "import os, sys\nfrom orchestrator.tempdirs import owned_tempdir\n"
        "held = [owned_tempdir(p) for p in sys.argv[1:]]\n"  # held: a TemporaryDirectory let go removes its folder
        "print(*(t.name for t in held))\nos._exit(0)\n"
    )
    env = {**os.environ, "TMPDIR": str(tmp)}
    done = subprocess.run([sys.executable, "-c", code, *prefixes], capture_output=True, text=True, check=True,
                          cwd=ROOT, env=env)  # fmt: skip
    made = [Path(line) for line in done.stdout.split()]
    assert len(made) == len(prefixes) and all((d / OWNER_FILE).is_file() for d in made)
    return made


def test_a_killed_processes_folders_are_swept_and_a_live_ones_kept(tmp_path: Path) -> None:
    dead = _killed_runs_folders(tmp_path, *KINDS)
    (dead[0] / "result.json").write_text("{}")  # what a normalizer child leaves: its whole rollout, at worst
    (dead[0] / "sub").mkdir()
    (dead[0] / "sub" / "stderr").write_text("x")
    live = tempfile.TemporaryDirectory(prefix=KINDS[0], dir=tmp_path)
    (Path(live.name) / OWNER_FILE).write_text(Owner.this_process().label())
    assert sorted(sweep_tempdirs(tmp_path)) == sorted(map(str, dead))
    assert not any(d.exists() for d in dead)
    assert Path(live.name).is_dir()
    assert sweep_tempdirs(tmp_path) == []
    live.cleanup()


def test_what_is_not_surely_a_dead_processes_folder_is_left(tmp_path: Path) -> None:
    dead_a, dead_b, dead_c = _killed_runs_folders(tmp_path, KINDS[0], KINDS[0], KINDS[0])
    label = (dead_a / OWNER_FILE).read_text()
    keep = [
        tmp_path / f"{KINDS[0]}no-owner",  # a version before owners, or one being made
        tmp_path / f"{KINDS[0]}other-host",
        tmp_path / f"{KINDS[0]}owner-is-a-link",
        tmp_path / f"{KINDS[0]}owner-too-long",
        tmp_path / f"{KINDS[0]}owner-not-text",
        tmp_path / f"{KINDS[1]}owner-is-a-folder",
        tmp_path / f"{KINDS[1]}owner-is-a-fifo",
        tmp_path / "hp-other-kind",
    ]
    for d in keep:
        d.mkdir()
    host, pid, started = label.split("/")
    (keep[1] / OWNER_FILE).write_text(f"elsewhere-{host}/{pid}/{started}")
    (keep[2] / OWNER_FILE).symlink_to(dead_a / OWNER_FILE)
    (keep[3] / OWNER_FILE).write_text(label + " " * 5000)
    (keep[4] / OWNER_FILE).write_bytes(label.encode() + b"\xff")
    (keep[5] / OWNER_FILE).mkdir()
    os.mkfifo(keep[6] / OWNER_FILE)  # with no writer: opening it must not wait for one
    (keep[7] / OWNER_FILE).write_text(label)
    # A link named like a folder of ours, to a dead process's folder: never followed.
    link = tmp_path / f"{KINDS[0]}a-link"
    link.symlink_to(dead_b, target_is_directory=True)
    # A file named like one.
    plain = tmp_path / f"{KINDS[1]}a-file"
    plain.write_text(label)
    # A dead process's folder that another user owns is theirs to remove.
    others = os.getuid() == 0
    if others:
        os.chown(dead_c, 65534, 65534)
    removed = sweep_tempdirs(tmp_path)
    assert sorted(removed) == sorted([str(dead_a), str(dead_b)])
    for d in keep:
        assert d.is_dir(), d
    assert link.is_symlink() and plain.is_file()
    assert dead_c.is_dir() == others


def test_a_link_inside_a_dead_folder_is_removed_and_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    (dead,) = _killed_runs_folders(tmp_path, KINDS[0])
    (dead / "escape").symlink_to(outside, target_is_directory=True)
    assert sweep_tempdirs(tmp_path) == [str(dead)]
    assert (outside / "keep.txt").read_text() == "mine"


def test_an_unlistable_folder_sweeps_nothing_and_raises_nothing(tmp_path: Path) -> None:
    assert sweep_tempdirs(tmp_path / "missing") == []


def test_owned_tempdir_names_its_process_and_refuses_an_unknown_kind() -> None:
    with owned_tempdir(KINDS[1]) as name:
        assert Owner.parse((Path(name) / OWNER_FILE).read_text()) == Owner.this_process()
    assert not Path(name).exists()
    with pytest.raises(ValueError, match="unknown temporary folder kind 'probe-x-'"):
        owned_tempdir("probe-x-")


def test_a_normalizers_folder_names_its_run_and_goes_with_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    normalizer = Normalizer(ReferenceHarness())
    normalizer.start()
    try:
        folder = Path(normalizer._tmp.name)  # type: ignore[union-attr]
        assert folder.parent == tmp_path and folder.name.startswith(KINDS[0])
        assert Owner.parse((folder / OWNER_FILE).read_text()) == Owner.this_process()
        assert sweep_tempdirs(tmp_path) == []  # its run is alive: this process
        assert folder.is_dir()
    finally:
        normalizer.close()
    assert not folder.exists()


def test_cleanup_removes_killed_runs_folders_and_says_how_many(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dead = _killed_runs_folders(tmp_path, *KINDS)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(cleanup_cli, "cleanup_everywhere", lambda *_: {})  # no engine here: only the folders
    out = CliRunner().invoke(app, ["cleanup"])
    assert out.exit_code == 0, out.output
    assert "temporary folders of killed runs: 2 removed" in out.output
    assert not any(d.exists() for d in dead)
