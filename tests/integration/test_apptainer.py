"""Apptainer for real: the reference catalogue from exported archives, with the verdicts Docker gives. Apptainer
is not packaged in Debian and cannot be installed here; these run in the shipped workflow's Apptainer leg
(.github/workflows/harness-conformance.yml) and skip here with the reason printed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from orchestrator.runtime.discover import probe_apptainer
from tests.harnesses.golden import verdict_table
from tests.integration.conftest import HP, RUNTIME_SUBSET_ARGS, Images, engine, images

_STATUS = probe_apptainer()
pytestmark = [
    pytest.mark.docker,
    pytest.mark.skipif(not _STATUS.answers, reason="apptainer: " + "; ".join(_STATUS.reasons or ["not usable"])),
]
__all__ = ["engine", "images"]


def hp(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HP, *args], capture_output=True, text=True, timeout=3600, check=False, env={**os.environ, **(env or {})}
    )


def test_reference_catalogue_under_apptainer_matches_docker(images: Images, tmp_path: Path) -> None:
    archives = tmp_path / "archives"
    res = hp("images", "export", "proxy", "reference", "-o", str(archives), "--runtime", "docker")
    assert res.returncode == 0, res.stderr[-3000:]
    env = {"HARNESS_PROBE_SIF_CACHE": str(tmp_path / "sif"), "HARNESS_PROBE_APPTAINER_WORK": str(tmp_path / "w")}
    app = hp("run", "-H", "reference", *RUNTIME_SUBSET_ARGS, "-o", str(tmp_path / "app"), "--runtime", "apptainer",
             "--image-archives", str(archives), env=env)  # fmt: skip
    assert app.returncode == 0, app.stderr[-3000:]
    dock = hp("run", "-H", "reference", *RUNTIME_SUBSET_ARGS, "-o", str(tmp_path / "docker"), "--runtime", "docker")
    assert dock.returncode == 0, dock.stderr[-3000:]
    a, d = verdict_table(tmp_path / "app", "reference"), verdict_table(tmp_path / "docker", "reference")
    assert a["scenarios"] == d["scenarios"]
    runtime = json.loads((tmp_path / "app" / "reference" / "tool_success" / "runtime.json").read_text())
    assert runtime["engine"]["runtime"] == "apptainer"
    assert sorted(p.name for p in (tmp_path / "sif").glob("*.sif")) == sorted(
        f"{n}-{json.loads((archives / 'images.json').read_text())['images'][n]['inputs_sha256'][:16]}.sif"
        for n in ("proxy", "reference")
    )
    # Every pod's work directory (and so its processes' namespace holder) is gone.
    assert not any((tmp_path / "w").glob("*/pod.json"))
    assert shutil.which("apptainer")
