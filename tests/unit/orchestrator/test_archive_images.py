"""Images for a runtime without an image store come from `images export` archives, by content-hash tag."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from orchestrator.cli import app
from orchestrator.images import ArchiveImages, BuildError, image_names, local_only
from orchestrator.runtime.apptainer_cmd import holder_command
from orchestrator.runtime.apptainer_pods import cleanup_apptainer_pods, write_pod_file

TAG = "harness-probe/proxy:0123456789abcdef"


def manifest(d: Path, size: int = 3) -> None:
    (d / "proxy-0123456789abcdef.tar").write_bytes(b"x" * 3)
    entry = {
        "tag": TAG,
        "image_id": "sha256:" + "a" * 64,
        "inputs_sha256": "0123456789abcdef" + "0" * 48,
        "archive": "proxy-0123456789abcdef.tar",
        "bytes": size,
        "sha256": "b" * 64,
    }
    doc = {"schema": "image-archives/v1", "tool_version": "0.1.0", "images": {"proxy": entry}}
    (d / "images.json").write_text(json.dumps(doc))


def test_an_exported_image_resolves_to_its_tag(tmp_path: Path) -> None:
    manifest(tmp_path)
    img = ArchiveImages(tmp_path).build("proxy")
    assert (img.tag, img.built) == (TAG, False)


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda d: None, "has no images.json"),
        (lambda d: manifest(d, size=99), "not the size images.json records"),
        (lambda d: (d / "images.json").write_text('{"schema": "image-archives/v1"}'), "tool_version"),
    ],
)
def test_bad_archives_are_named_errors(tmp_path: Path, setup: object, message: str) -> None:
    setup(tmp_path)  # type: ignore[operator]
    with pytest.raises(BuildError, match=message):
        ArchiveImages(tmp_path).build("proxy")


def test_an_image_not_exported_says_how_to_export_it(tmp_path: Path) -> None:
    manifest(tmp_path)
    with pytest.raises(BuildError, match="images export hermes"):
        ArchiveImages(tmp_path).build("hermes")


def test_cleanup_ends_a_killed_runs_pod_and_spares_others(tmp_path: Path) -> None:
    holder = subprocess.Popen(holder_command(sys.executable), stdout=subprocess.PIPE, start_new_session=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"pod-ready"
        mine, other = tmp_path / "hp-a-1", tmp_path / "hp-b-1"
        mine.mkdir()
        other.mkdir()
        write_pod_file(mine, {"harness-probe.run": "A"}, holder.pid)
        write_pod_file(other, {"harness-probe.run": "B"}, os.getpid())  # not a holder: never signalled
        assert cleanup_apptainer_pods(tmp_path, "A") == {"pods": 1}
        assert holder.wait(10) == -signal.SIGKILL
        assert not mine.exists() and other.exists()
    finally:
        if holder.poll() is None:
            os.killpg(holder.pid, signal.SIGKILL)
            holder.wait(10)
        if holder.stdout is not None:
            holder.stdout.close()


def test_an_image_whose_licence_forbids_redistribution_is_never_exported(tmp_path: Path) -> None:
    """Copilot CLI's licence allows no standalone redistribution: `images export` refuses its image by name, before
    any engine is asked (so no archive of it is ever written), and says where the reason is kept."""
    out = tmp_path / "archives"
    res = CliRunner().invoke(app, ["images", "export", "proxy", "copilot", "-o", str(out)])
    assert res.exit_code == 2, res.output
    assert "image 'copilot' is built locally only and never exported (images/copilot/LOCAL-ONLY)" in res.output
    assert not out.exists()
    assert local_only("copilot") is not None and "standalone" in str(local_only("copilot"))
    # Every other image keeps its archive: the marker is per image folder, read nowhere else.
    assert [name for name in image_names() if local_only(name) is not None] == ["copilot"]


def test_the_ci_cache_skips_local_only_images() -> None:
    # The workflow saves the engine's harness-probe images into the Actions cache that later runs (a fork's pull
    # requests among them) restore: an image with a LOCAL-ONLY file must be left out by name.
    workflow = Path(__file__).resolve().parents[3] / ".github" / "workflows" / "harness-conformance.yml"
    save = workflow.read_text().split("- name: Save images", 1)[1].split("- name:", 1)[0]
    assert 'if [ -f ".harness-probe/images/$name/LOCAL-ONLY" ]; then' in save
    assert save.index("LOCAL-ONLY") < save.index("docker save")
