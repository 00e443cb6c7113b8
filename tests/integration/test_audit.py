"""Audit of a real run's saved output: offline, the same verdicts byte for byte apart from timestamps."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from orchestrator.audit_copy import copy_evidence
from orchestrator.report import without_timestamps
from orchestrator.runtime.collect import CollectLimits
from tests.integration.conftest import Images, hp

pytestmark = pytest.mark.docker


def test_audit_of_a_copied_run_reproduces_the_summary(images: Images, tmp_path: Path) -> None:
    run = tmp_path / "run"
    res = hp("run", "-H", "reference", "-s", "tool_success", "-s", "retry_429", "-o", str(run))
    assert res.code == 0, res.stderr[-2000:]
    copied = tmp_path / "copied"
    shutil.copytree(run, copied)
    for args, name in (([], "audit"), (["--harness", "reference"], "renormalized")):
        res = hp("audit", str(copied), "-o", str(tmp_path / name), *args)
        assert res.code == 0, res.stderr[-2000:]
        original = json.loads((run / "summary.json").read_text())
        audited = json.loads((tmp_path / name / "summary.json").read_text())
        assert json.dumps(without_timestamps(audited), sort_keys=True) == json.dumps(
            without_timestamps(original), sort_keys=True
        )
        for ep in ("tool_success", "retry_429"):
            a = (tmp_path / name / "reference" / ep / "scenario_result.json").read_bytes()
            assert a == (run / "reference" / ep / "scenario_result.json").read_bytes()
        assert (tmp_path / name / "report.html").is_file() and (tmp_path / name / "junit.xml").is_file()
    # The audit's copy counts a run's evidence as the run's collection counted it, file for file and byte for byte:
    # what the run copied whole under its caps, the audit copies whole under the same caps.
    for ep in ("tool_success", "retry_429"):
        record = json.loads((run / "reference" / ep / "scenario_result.json").read_text())["collection"]
        again = copy_evidence(copied / "reference" / ep, tmp_path / "recount" / ep, CollectLimits())
        assert (again.files, again.copied, again.findings) == (record["files"], record["bytes"], [])
