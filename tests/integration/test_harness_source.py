"""`run --harness-source`: a copy of the reference harness's image folder with a planted misreport is built and
probed in place of the pin; the check that names the lie fails while the pin passes, and reports say so."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from orchestrator.evidence import load_json
from orchestrator.resources import images_dir
from orchestrator.variants import source_sha256
from tests.integration.conftest import Images, hp

pytestmark = pytest.mark.docker

_HONEST = 'count(getattr(usage, "completion_tokens", None))'
# The planted lie: one completion token more than the provider sent, on every call.
_LIE = '(lambda n: None if n is None else n + 1)(count(getattr(usage, "completion_tokens", None)))'


def _misreporting_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "reference-src"
    shutil.copytree(images_dir() / "reference", copy, ignore=shutil.ignore_patterns("__pycache__"))
    chat = copy / "probe_reference" / "chat.py"
    text = chat.read_text()
    assert text.count(_HONEST) == 1, "the reference's token_stats changed; plant the lie elsewhere"
    chat.write_text(text.replace(_HONEST, _LIE))
    return copy


def _check(result: dict[str, object], check_id: str) -> dict[str, object]:
    checks = result["checks"]
    assert isinstance(checks, list)
    return next(c for c in checks if c["id"] == check_id)


def test_planted_misreport_fails_the_check_naming_it_while_the_pin_passes(images: Images, tmp_path: Path) -> None:
    source = _misreporting_copy(tmp_path)
    pinned = hp("run", "-H", "reference", "-s", "tool_success", "-o", str(tmp_path / "pin"))
    assert pinned.code == 0, pinned.stdout + pinned.stderr
    pin_result = load_json(tmp_path / "pin/reference/tool_success/scenario_result.json", "scenario-result/v1")
    assert _check(pin_result, "tokens.match")["status"] == "pass"

    res = hp("run", "-H", "reference", "--harness-source", str(source), "-s", "tool_success", "-o", str(tmp_path / "s"))
    assert res.code == 1, res.stdout + res.stderr
    ep = tmp_path / "s/reference/tool_success"
    result = load_json(ep / "scenario_result.json", "scenario-result/v1")
    tokens = _check(result, "tokens.match")
    assert tokens["status"] == "fail"
    assert "completion" in " ".join(str(r) for r in tokens["reasons"])  # type: ignore[attr-defined]
    # Only the lie fails: the rest of what the copy reports is the pin's.
    failed = {c["id"] for c in result["checks"] if c["status"] == "fail"}  # type: ignore[attr-defined,index]
    assert failed <= {"tokens.match", "tokens.totals_match"}, failed

    digest = source_sha256(source)
    runtime = load_json(ep / "runtime.json", "runtime/v1")
    assert runtime["harness_override"] == {
        "kind": "source",
        "pinned": None,
        "source": str(source.resolve()),
        "source_kind": "image-folder",
        "source_sha256": digest,
        "ran": "probe-reference 0.1.0",
    }
    assert runtime["harness"]["tag"] != load_json(tmp_path / "pin/suite.json", "suite/v1")["images"]["reference"]["tag"]
    chat = (source / "probe_reference" / "chat.py").read_bytes()
    assert runtime["harness"]["files"]["probe_reference/chat.py"] == hashlib.sha256(chat).hexdigest()
    summary = load_json(tmp_path / "s/summary.json", "probe-summary/v1")
    assert summary["harness_overrides"]["reference"]["source_sha256"] == digest
    for report in ("report.md", "report.html"):
        text = (tmp_path / "s" / report).read_text()
        assert digest in text and "version that ran: probe-reference 0.1.0" in text, report
    assert f"sha256 {digest}" in res.stdout


def test_a_source_with_nothing_installable_is_a_named_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    for source, named in ((tmp_path / "missing", "does not exist"), (tmp_path / "empty", "no image folder")):
        res = hp("run", "-H", "reference", "--harness-source", str(source), "-o", str(tmp_path / "out"))
        assert res.code == 2, res.stdout + res.stderr
        assert named in res.stderr and "Traceback" not in res.stderr
        assert not (tmp_path / "out").exists()
