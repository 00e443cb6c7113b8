"""The audit's copy with its markers read in place: the collection a whole copy makes, the markers a copy gives the
checks, one file written for them all."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

import orchestrator.audit_copy as audit_copy
from orchestrator.audit import audit
from orchestrator.audit_copy import copy_evidence
from orchestrator.evidence.markers import (
    INLINE_CHARS,
    MARKER_BYTES,
    MARKERS_FILE,
    MAX_MARKERS,
    Digest,
    read_folder,
    read_markers,
)
from orchestrator.runtime.collect import Collection, CollectLimits, Finding
from tests.unit.checks.conftest import FIXTURES

MANY = 600


def _episode(tmp_path: Path, markers: int = MANY) -> Path:
    """The tool_success fixture with `markers` more marker files and what a hostile harness leaves among them."""
    ep = tmp_path / "saved" / "reference" / "tool_success"
    shutil.copytree(FIXTURES / "tool_success", ep)
    m = ep / "markers"
    for i in range(markers):
        (m / f"m{i:05d}").write_text(f"token-{i}")
    (m / "m00007-link").symlink_to("/etc/passwd")
    (m / "m00008-dir" / "deeper").mkdir(parents=True)
    (m / "m00008-dir" / "deeper" / "inside.txt").write_text("counted, never a marker")
    os.mkfifo(m / "m00009-fifo")
    (m / "m00010-big").write_bytes(b"b" * (MARKER_BYTES + 1))
    (m / "m00011-cap").write_bytes(b"c" * MARKER_BYTES)
    (m / "m00012-bytes").write_bytes(b"\xff\xfeno utf-8")
    return ep


def _state(c: Collection) -> tuple[int, int, list[Finding], int]:
    return c.files, c.copied, c.findings, c.findings_dropped


def _copied_whole(ep: Path, dest: Path, limits: CollectLimits) -> Collection:
    """The oracle: every part copied in turn, the markers folder too, as the audit copied before it read them."""
    dest.mkdir()
    whole = Collection(limits)
    for name in ("harness.log", "native", "proxy.log", "witness.jsonl", "twin", "markers"):
        whole.copy_tree(ep / name, dest / name, name, counted=name in ("witness.jsonl", "markers"))
    for name in ("rollout.json", "runtime.json", "scenario.json", "trajectory.json", MARKERS_FILE):
        alone = Collection(CollectLimits(max_bytes=audit_copy.MAX_FILE_BYTES, max_files=1))
        alone.copy_tree(ep / name, dest / name, name)
        for finding in alone.findings:
            whole.note(finding)
    return whole


@pytest.mark.parametrize(
    "limits",
    [
        CollectLimits(),
        CollectLimits(max_files=300),  # the file cap is reached among the markers
        CollectLimits(max_bytes=70_000),  # the byte cap too, among them
        CollectLimits(max_bytes=5000),  # and the witness is not copied at all
    ],
    ids=["whole", "file-cap", "byte-cap-in-markers", "byte-cap"],
)
def test_the_read_in_place_is_the_whole_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limits: CollectLimits
) -> None:
    ep = _episode(tmp_path)
    (ep / "rollout.json").write_bytes((ep / "rollout.json").read_bytes() + b" " * 64)
    monkeypatch.setattr(audit_copy, "MAX_FILE_BYTES", (ep / "rollout.json").stat().st_size - 1)
    read = copy_evidence(ep, tmp_path / "read", limits)
    whole = _copied_whole(ep, tmp_path / "whole", limits)
    assert _state(read) == _state(whole)
    kinds = [f.kind for f in read.findings]
    assert kinds[-1] == "over_cap_file" and read.findings[-1].path == "rollout.json"
    assert "symlink" in kinds and "fifo" in kinds
    # What the checks read: the same map a reading of the copied folder gives, from one file instead of a folder.
    assert read_markers(tmp_path / "read" / MARKERS_FILE) == read_folder(tmp_path / "whole" / "markers")
    assert not (tmp_path / "read" / "markers").exists()
    for name in ("witness.jsonl", "scenario.json"):
        assert os.path.lexists(tmp_path / "read" / name) == os.path.lexists(tmp_path / "whole" / name), name


def test_the_markers_file_holds_what_a_folder_s_reading_holds(tmp_path: Path) -> None:
    ep = _episode(tmp_path)
    copy_evidence(ep, tmp_path / "out", CollectLimits())
    markers = read_markers(tmp_path / "out" / MARKERS_FILE)
    assert markers["m00011-cap"] == "c" * MARKER_BYTES and markers["m00012-bytes"] == "\ufffd\ufffdno utf-8"
    for gone in ("m00007-link", "m00008-dir", "m00009-fifo", "m00010-big"):
        assert gone not in markers, gone
    assert len(markers) == MANY + 2 + 2  # the fixture's two, and two of the odd ones


def test_past_max_markers_names_are_not_read(tmp_path: Path) -> None:
    ep = _episode(tmp_path, markers=MAX_MARKERS + 5)
    copy_evidence(ep, tmp_path / "out", CollectLimits())
    _copied_whole(ep, tmp_path / "whole", CollectLimits())
    markers = read_markers(tmp_path / "out" / MARKERS_FILE)
    # The names a copy holds (not the link or the FIFO), the first MAX_MARKERS of them: the big file and the
    # folder take their places, and are not markers.
    assert markers == read_folder(tmp_path / "whole" / "markers") and len(markers) == MAX_MARKERS - 2


def test_an_audit_of_an_audit_reads_its_markers_file(tmp_path: Path) -> None:
    _episode(tmp_path)
    first = audit(tmp_path / "saved", tmp_path / "out")
    again = audit(tmp_path / "out", tmp_path / "again")
    assert [r["verdict"] for r in first.results] == ["pass"] == [r["verdict"] for r in again.results]
    assert again.results[0]["checks"] == first.results[0]["checks"]
    ep = Path("reference") / "tool_success"
    assert (tmp_path / "again" / ep / MARKERS_FILE).read_bytes() == (tmp_path / "out" / ep / MARKERS_FILE).read_bytes()
    # Its counts are the run's, as the first audit kept them: the copy of the file added no finding.
    assert again.results[0]["collection"] == first.results[0]["collection"]


def test_a_marker_name_that_is_not_utf8_is_left_out_and_the_verdicts_stand(tmp_path: Path) -> None:
    plain = audit(_layout_plain(tmp_path / "plain"), tmp_path / "plain-out")
    ep = _episode(tmp_path)
    (ep / "markers" / os.fsdecode(b"m-\xff-not-utf8.txt")).write_text("a harness's odd name")
    res = audit(tmp_path / "saved", tmp_path / "out")
    markers = read_markers(tmp_path / "out" / "reference" / "tool_success" / MARKERS_FILE)
    assert len(markers) == MANY + 2 + 2 and all(n.isprintable() for n in markers)
    # What the run reads in place (read_folder) and the audit's file give the checks the same verdicts.
    assert res.results[0]["verdict"] == "pass" == plain.results[0]["verdict"]
    assert res.results[0]["checks"] == plain.results[0]["checks"]


def test_markers_a_json_writer_would_blow_up_are_kept_as_digests(tmp_path: Path) -> None:
    # Every byte 0xff decodes to U+FFFD, which JSON writes as six bytes: 700 such markers of 64 KiB wrote 275 MB,
    # past the reader's own cap, and the audit then failed every marker the run had found.
    plain = audit(_layout_plain(tmp_path / "plain"), tmp_path / "plain-out")
    ep = _episode(tmp_path, markers=0)
    for i in range(50):
        (ep / "markers" / f"junk{i:03d}").write_bytes(b"\xff" * MARKER_BYTES)
    res = audit(tmp_path / "saved", tmp_path / "out")
    written = tmp_path / "out" / "reference" / "tool_success" / MARKERS_FILE
    assert written.stat().st_size < 1 << 20  # 50 x 393 KB before
    assert res.results[0]["checks"] == plain.results[0]["checks"]
    markers = read_markers(written)
    assert markers["junk007"] == "\ufffd" * MARKER_BYTES and markers["junk007"] != "\ufffd" * (MARKER_BYTES - 1)
    assert markers["m00011-cap"] == "c" * MARKER_BYTES != markers["junk007"]
    assert markers == read_folder(ep / "markers")  # the folder's reading, value for value


def test_a_digest_equals_exactly_the_text_it_was_made_of() -> None:
    text = "t" * (INLINE_CHARS + 1)
    d = Digest.of(text)
    assert d == text and text == d  # either side first
    assert (d != text) is False  # != is ==, inverted
    assert d != text[:-1] + "u" and d != text + "t" and d != 1 and d != Digest.of(text + "t")
    assert {d: 1}[Digest.of(text)] == 1


def _layout_plain(root: Path) -> Path:
    shutil.copytree(FIXTURES / "tool_success", root / "reference" / "tool_success")
    return root


def test_a_saved_markers_file_beside_the_folder_is_named_and_not_read(tmp_path: Path) -> None:
    ep = _episode(tmp_path)
    (ep / MARKERS_FILE).write_text(json.dumps({"schema": "probe-markers/v1", "markers": {"forged.txt": "x"}}))
    res = audit(tmp_path / "saved", tmp_path / "out")
    findings = [(f["path"], f["reason"]) for f in res.results[0]["collection"]["findings"]]
    assert (MARKERS_FILE, "not used: the markers folder beside it is read") in findings
    assert "forged.txt" not in read_markers(tmp_path / "out" / "reference" / "tool_success" / MARKERS_FILE)
    assert res.results[0]["verdict"] == "pass"


@pytest.mark.parametrize(
    "content",
    [
        b"not json",
        json.dumps({"schema": "probe-markers/v1", "markers": {"a": 1}}).encode(),
        json.dumps({"schema": "probe-markers/v1", "markers": {"../x": "t"}}).encode(),
        json.dumps({"schema": "probe-markers/v1", "markers": {"a": "x" * (MARKER_BYTES + 1)}}).encode(),
    ],
    ids=["not-json", "not-text", "a-path", "too-long"],
)
def test_an_unreadable_markers_file_fails_tools_executed_by_name(tmp_path: Path, content: bytes) -> None:
    ep = _episode(tmp_path, markers=0)
    shutil.rmtree(ep / "markers")
    (ep / MARKERS_FILE).write_bytes(content)
    res = audit(tmp_path / "saved", tmp_path / "out")
    result = res.results[0]
    assert result["verdict"] == "fail" and res.exit_code == 1
    assert "markers" in result["inputs_unavailable"]
    (check,) = [c for c in result["checks"] if c["id"] == "witness.tools_executed"]
    assert check["status"] == "fail"
    assert any(r.startswith("the collected markers cannot be read: ") for r in check["reasons"])
    assert {c["id"] for c in result["checks"] if c["status"] == "fail"} == {"witness.tools_executed"}


def test_a_linked_markers_folder_is_not_read(tmp_path: Path) -> None:
    ep = _episode(tmp_path, markers=0)
    (ep / "markers").rename(tmp_path / "elsewhere")
    (ep / "markers").symlink_to(tmp_path / "elsewhere")
    res = audit(tmp_path / "saved", tmp_path / "out")
    result = res.results[0]
    assert [(f["kind"], f["path"]) for f in result["collection"]["findings"]] == [("symlink", "markers")]
    assert not os.path.lexists(tmp_path / "out" / "reference" / "tool_success" / MARKERS_FILE)
    (check,) = [c for c in result["checks"] if c["id"] == "witness.tools_executed"]
    assert check["status"] == "fail" and all("collected marker file missing" in r for r in check["reasons"])


def test_the_audit_s_own_finding_comes_after_the_copy_s(tmp_path: Path) -> None:
    ep = _episode(tmp_path)
    (ep / "scenario_result.json").write_text("{not json")
    res = audit(tmp_path / "saved", tmp_path / "out")
    paths = [f["path"] for f in res.results[0]["collection"]["findings"]]
    assert paths == ["markers/m00007-link", "markers/m00009-fifo", "scenario_result.json"]


def test_nothing_is_written_per_marker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ep = _episode(tmp_path)
    made: list[Any] = []
    real = os.open

    def spy(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if flags & os.O_CREAT:
            made.append(path)
        return real(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", spy)
    copy_evidence(ep, tmp_path / "out", CollectLimits())
    assert len(made) < 10, made  # the witness, the scenario, the rollout: never one per marker
