"""Variant inputs without a registry or engine: the package table, the source kinds, option parsing, reports."""

from __future__ import annotations

import io
import json
import os
import tarfile
from pathlib import Path

import pytest

from orchestrator.cli.run_variant import _split
from orchestrator.images import image_folder
from orchestrator.report.overrides import override_text
from orchestrator.variants import (
    PACKAGES,
    Package,
    SourceError,
    UnknownVersion,
    check_version,
    pinned_version,
    source_sha256,
    source_variant,
)
from orchestrator.variants.packages import repin_requirements
from orchestrator.variants.source import npm_tarball, python_files

PI = PACKAGES["pi"]


@pytest.mark.parametrize("image", sorted(PACKAGES))
def test_every_declared_package_is_the_one_its_image_pins(image: str) -> None:
    # A table line naming a package the image folder does not pin would build a variant of nothing.
    assert pinned_version(image_folder(image), PACKAGES[image]), image


def test_repin_changes_only_the_package_line() -> None:
    text = "# c\nmini-swe-agent==2.4.6\nlitellm==1.110.2\n"
    out = repin_requirements(text, PACKAGES["mini-swe-agent"], "2.4.5")
    assert out == "# c\nmini-swe-agent==2.4.5\nlitellm==1.110.2\n"
    # A pin with extras is the package's pin too (CrewAI's image installs crewai[anthropic]).
    assert repin_requirements("crewai[anthropic]==1.15.30\n", PACKAGES["crewai"], "1.15.29") == (
        "crewai[anthropic]==1.15.29\n"
    )


@pytest.mark.parametrize("bad", ["", "1 2", "../x", "0.7;rm -rf", "-1"])
def test_a_version_that_is_no_version_is_refused_before_asking(bad: str) -> None:
    with pytest.raises(UnknownVersion):
        check_version(Package("npm", "never-asked", "/opt/x"), bad)


def _tgz(path: Path, name: str) -> Path:
    data = json.dumps({"name": name, "version": "1.0.0"}).encode()
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo("package/package.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return path


def test_npm_tarball_of_the_harness_package_is_taken_and_another_package_refused(tmp_path: Path) -> None:
    good = _tgz(tmp_path / "pi.tgz", PI.name)
    assert npm_tarball(good, PI) == good.read_bytes()
    with pytest.raises(SourceError, match="is the npm package 'left-pad'"):
        npm_tarball(_tgz(tmp_path / "other.tgz", "left-pad"), PI)
    (tmp_path / "junk.tgz").write_bytes(b"not a tarball")
    with pytest.raises(SourceError, match="no npm package tarball"):
        npm_tarball(tmp_path / "junk.tgz", PI)


def test_python_sources_wheel_name_and_project_folder(tmp_path: Path) -> None:
    hermes = PACKAGES["hermes"]
    wheel = tmp_path / "hermes_agent-0.20.0-py3-none-any.whl"
    wheel.write_bytes(b"PK")
    target, files = python_files(wheel, hermes)
    assert target == f"harness-source/{wheel.name}" and files == {target: b"PK"}
    other = tmp_path / "other-1.0-py3-none-any.whl"
    other.write_bytes(b"PK")
    with pytest.raises(SourceError, match="not of 'hermes-agent'"):
        python_files(other, hermes)
    with pytest.raises(SourceError, match=r"no pyproject\.toml"):
        python_files(tmp_path, hermes)
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "HEAD").write_text("ref")
    (project / "pyproject.toml").write_text("[project]\n")
    target, files = python_files(project, hermes)
    assert sorted(files) == ["harness-source/project/pyproject.toml"]  # version control is never copied


def test_source_hash_is_the_link_free_tree_and_changes_with_content(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("1")
    first = source_sha256(tmp_path)
    os.symlink("/etc/passwd", tmp_path / "link")
    with_link = source_sha256(tmp_path)
    assert with_link == first  # a link is never read; it is refused when copied (below)
    (tmp_path / "a").write_text("2")
    assert source_sha256(tmp_path) != first


def test_an_image_folder_source_with_a_link_is_refused(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text("FROM x\n")
    os.symlink("/etc/passwd", tmp_path / "passwd")
    with pytest.raises(SourceError, match="links or special files"):
        source_variant("reference", "reference", tmp_path)


def test_option_values_pair_with_harnesses() -> None:
    assert _split(["0.72.1"], ["pi"], "--harness-version") == {"pi": "0.72.1"}
    assert _split(["pi=0.72.1"], ["pi", "codex"], "--harness-version") == {"pi": "0.72.1"}
    assert _split(["/a=b/c"], ["reference"], "--harness-source") == {"reference": "/a=b/c"}
    with pytest.raises(ValueError, match="name the harness"):
        _split(["0.72.1"], ["pi", "codex"], "--harness-version")
    with pytest.raises(ValueError, match="given twice"):
        _split(["pi=1", "pi=2"], ["pi", "codex"], "--harness-version")


def test_override_sentence_names_pin_and_what_ran() -> None:
    text = override_text("pi", {"kind": "version", "pinned": "0.73.1", "version": "0.72.1"}, "0.72.1")
    assert text == "pi: pin 0.73.1 overridden by release 0.72.1; version that ran: 0.72.1"
    src = {"kind": "source", "pinned": None, "source": "/s", "source_kind": "image-folder", "source_sha256": "ab"}
    assert override_text("reference", src) == (
        "reference: pinned image folder overridden by local source /s (image-folder, sha256 ab)"
    )
