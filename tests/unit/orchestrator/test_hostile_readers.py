"""Hostile evidence after collection: text that is not Unicode at every sink, ATIF call counts and reading rules,
folder trees deeper than the one depth cap (issue 31: 1, 2, 3, 4)."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from orchestrator.atif import load_atif, rollout_to_atif
from orchestrator.atif.files import find_atif
from orchestrator.atif.validate import MAX_LLM_CALLS
from orchestrator.audit import audit
from orchestrator.checks.model import REGISTRY, run_checks
from orchestrator.cli.run import print_verdicts
from orchestrator.evidence import FormatError
from orchestrator.evidence.text import clean
from orchestrator.report import build_summary, summary_bytes, write_reports
from orchestrator.runtime.collect import MAX_TREE_DEPTH, Collection
from orchestrator.treehash import TreeHashes, walk
from tests.unit.checks.conftest import FIXTURES
from tests.unit.report.conftest import checks, make_suite, result, write_run

HP = str(Path(sys.executable).with_name("harness-probe"))
LONE = "\ud800"
BAD_NAME = os.fsdecode(b"log-\xff\xfe.txt")  # a native file name that is not UTF-8: a lone surrogate escape
T0, T1 = "2025-01-01T12:00:00.000Z", "2025-01-01T12:30:00.000Z"


def _cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    # Bytes, strict: what a CI log or a terminal would receive.
    return subprocess.run([HP, *args], capture_output=True, timeout=120, check=False)


def test_clean_escapes_lone_surrogates_and_controls_and_keeps_text() -> None:
    assert clean(f"a{LONE}b{BAD_NAME}\x1b[31m\x00") == "a\\ud800blog-\\udcff\\udcfe.txt\\x1b[31m\\x00"
    assert clean("é 😀 tab\tnewline\n") == "é 😀 tab\tnewline\n"
    clean(LONE + BAD_NAME).encode("ascii")  # nothing left that a strict writer refuses


def test_clean_escapes_every_bidirectional_control_and_keeps_right_to_left_text() -> None:
    # "report\u202etxt.exe" shows as "reportexe.txt": a reason or a file name shown backwards.
    controls = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
    assert clean(controls) == "".join(f"\\u{ord(c):04x}" for c in controls)
    # Their neighbours are text, and so is a right-to-left script.
    kept = "\u061b\u061d\u2010\u2029\u202f\u2065\u206a שלום مرحبا 😀 \U0001f600"
    assert clean(kept) == kept


def test_clean_escapes_what_shows_as_nothing() -> None:
    # `call_1\u200b` and `call_1` read as one id on a page where a check says they differ.
    invisible = (
        "\xad\u034f\u115f\u1160\u17b4\u17b5\u180b\u180e\u180f\u200b\u200c\u200d\u2060\u2064\u3164\ufe00\ufe0f"
        "\ufeff\uffa0\ufff9\ufffb"
    )
    assert clean(invisible) == "\\xad" + "".join(f"\\u{ord(c):04x}" for c in invisible[1:])
    # Past the Basic Multilingual Plane an escape takes eight digits: `\ue0001` would read as U+E000 and a "1".
    assert clean("\U000e0001\U000e007f\U000e0100\U000e01ef") == "\\U000e0001\\U000e007f\\U000e0100\\U000e01ef"
    assert clean("call_1\u200b") != clean("call_1")


def test_check_reasons_quoting_harness_text_are_cleaned_where_they_are_made() -> None:
    check = next(c for c in REGISTRY.values() if not c.depends_on)
    quoting = dataclasses.replace(check, fn=lambda _ev: [f"tool output {LONE} from {BAD_NAME}"])
    ev = SimpleNamespace(derived={}, unavailable=lambda _n: None)
    [res] = run_checks(ev, {flag: True for flag in check.scope}, [quoting])  # type: ignore[arg-type]
    assert res.reasons == ["tool output \\ud800 from log-\\udcff\\udcfe.txt"]


def _nasty_results() -> list[dict[str, Any]]:
    # As if a reason had slipped past the runner: every sink must still write, never raise.
    bad = checks(tools__witness_output=("fail", [f"output {LONE} in {BAD_NAME}"]))
    normalize = {"status": "error", "message": f"cannot read {BAD_NAME}{LONE}"}
    return [result("reference", "tool_success", "fail", bad, normalize=normalize)]


def test_every_report_and_the_run_table_take_lone_surrogates(tmp_path: Path, monkeypatch: Any) -> None:
    suite = make_suite(["reference"], ["tool_success"])
    run = write_run(tmp_path / "run", suite, _nasty_results())
    summary = build_summary(run.dir, suite, run.results, True, T0, T1)
    write_reports(run.dir, summary)
    for name in ("report.md", "report.html", "junit.xml", "summary.json"):
        text = (run.dir / name).read_bytes().decode("utf-8")  # strict: valid UTF-8 throughout
        assert "\\ud800" in text or "\\\\ud800" in text, name
    # run's table, printed to a strict UTF-8 stream (a CI log): no UnicodeEncodeError after the verdicts.
    out = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(out, encoding="utf-8", errors="strict"))
    print_verdicts(SimpleNamespace(results=run.results))  # type: ignore[arg-type]
    sys.stdout.flush()
    printed = out.getvalue().decode("utf-8")
    assert "normalize: cannot read log-\\udcff\\udcfe.txt\\ud800" in printed


def test_the_run_table_shows_the_start_of_a_reason_quoting_a_megabyte_output(monkeypatch: Any) -> None:
    huge = "x" * 3_000_000
    results = [
        result("reference", "tool_success", "fail", checks(tools__witness_output=("fail", [f"output {huge!r}"])))
    ]
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    print_verdicts(SimpleNamespace(results=results))  # type: ignore[arg-type]
    printed = out.getvalue()
    assert len(printed) < 20_000 and "… (3,000,0" in printed  # the note's length, with its where and check id


def test_an_audited_folder_named_in_bytes_that_are_not_utf8_is_skipped_by_name(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    for harness in (os.fsdecode(b"ref\xffname"), "reference"):
        shutil.copytree(FIXTURES / "tool_success", tmp_path / "saved" / harness / "tool_success")
    res = _cli("audit", str(tmp_path / "saved"), "-o", str(tmp_path / "out"))
    assert res.returncode == 0, res.stderr
    # The other episode is audited; this one is named, escaped, in a strict UTF-8 stream.
    assert "skipped ref\\udcffname/tool_success: its name is not UTF-8" in res.stderr.decode("utf-8")
    assert sorted(p.name for p in (tmp_path / "out").iterdir() if p.is_dir()) == ["reference"]


def test_a_native_file_named_in_bytes_that_are_not_utf8_leaves_every_record_readable(tmp_path: Path) -> None:
    ep = tmp_path / "saved" / "reference" / "tool_success"
    shutil.copytree(FIXTURES / "tool_success", ep)
    (ep / "native").mkdir()
    (ep / "native" / BAD_NAME).write_text("a harness's odd name")
    res = audit(tmp_path / "saved", tmp_path / "out")
    assert res.exit_code == 0
    from orchestrator.evidence import load_json

    inputs = load_json(tmp_path / "out" / "audit.json", "audit/v1")["inputs"]  # the strict reader
    assert "reference/tool_success/witness.jsonl" in inputs and not any("native/" in k for k in inputs)
    assert (tmp_path / "out" / "reference" / "tool_success" / "episode.html").is_file()


def test_a_link_to_a_name_in_bytes_that_are_not_utf8_is_its_bytes() -> None:
    from orchestrator.report.html import episode_href, url_part

    assert episode_href(os.fsdecode(b"ref\xffname"), "a b") == "ref%FFname/a%20b/episode.html"
    assert url_part("\ud800") == "%ED%A0%80"  # a surrogate no file name holds (JSON text): no raise either


def test_ci_report_writes_its_files_whatever_the_summaries_hold(tmp_path: Path) -> None:
    suite = make_suite(["reference"], ["tool_success"])
    run = write_run(tmp_path / "run", suite, _nasty_results())
    (run.dir / "summary.json").write_bytes(summary_bytes(build_summary(run.dir, suite, run.results, True, T0, T1)))
    md, check = tmp_path / "report.md", tmp_path / "check.json"
    res = _cli("ci", "report", str(run.dir), "-o", str(md), "--check-json", str(check))
    assert res.returncode in (1, 2), res.stderr
    assert b"Traceback" not in res.stderr and b"internal error" not in res.stderr
    body = json.loads(check.read_bytes())
    assert body["output"]["summary"] == md.read_text(encoding="utf-8") == res.stdout.decode("utf-8")
    assert LONE not in md.read_text(encoding="utf-8")


def test_export_of_a_rollout_with_a_lone_surrogate_leaves_no_empty_trajectory(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "tool_success", run / "reference" / "tool_success")
    ep = run / "reference" / "tool_success"
    rollout = json.loads((ep / "rollout.json").read_text())
    rollout["outcome"]["final_answer"] += LONE
    (ep / "rollout.json").write_text(json.dumps(rollout))  # the escape: JSON text, not Unicode text
    (ep / "native").mkdir(exist_ok=True)
    (ep / "native" / BAD_NAME).write_text("x")
    res = _cli("-q", "export", str(run), "-o", str(tmp_path / "atif"))
    assert res.returncode in (0, 1, 2) and b"Traceback" not in res.stderr, res.stderr
    assert b"lone surrogate" in res.stdout + res.stderr
    assert not list((tmp_path / "atif").rglob("trajectory.json")), "an unreadable rollout exported"
    # The same episode without the surrogate exports, as ASCII, whole.
    rollout["outcome"]["final_answer"] = rollout["outcome"]["final_answer"][:-1] + "é"
    (ep / "rollout.json").write_text(json.dumps(rollout))
    res = _cli("-q", "export", str(run), "-o", str(tmp_path / "atif2"))
    assert res.returncode == 0, res.stderr
    [traj] = (tmp_path / "atif2").rglob("trajectory.json")
    raw = traj.read_bytes()
    assert raw.isascii() and b"\\u00e9" in raw and json.loads(raw)["schema_version"]


def _atif_episode(tmp_path: Path) -> tuple[Path, Path, dict[str, Any]]:
    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "tool_success", run / "reference" / "tool_success")
    ep = run / "reference" / "tool_success"
    doc = rollout_to_atif(json.loads((ep / "rollout.json").read_text()), "ATIF-v1.7")
    (ep / "native" / "logs").mkdir(parents=True, exist_ok=True)
    return run, ep, doc


def _audit_message(run: Path, out: Path) -> tuple[str, dict[str, Any]]:
    res = audit(run, out, rollout_format="atif")
    [r] = res.results
    assert r["verdict"] == "fail", r["execution"]
    assert r["execution"]["status"] != "error"
    return str(r["normalize"]["message"]), r


def test_a_huge_llm_call_count_is_a_fail_of_the_writer_not_a_million_records(tmp_path: Path) -> None:
    run, ep, doc = _atif_episode(tmp_path)
    agent = next(s for s in doc["steps"] if s["source"] == "agent")
    agent["llm_call_count"] = 10**15
    (ep / "native" / "logs" / "trajectory.json").write_text(json.dumps(doc))
    message, _ = _audit_message(run, tmp_path / "out")
    assert "llm_call_count_cap" in message and str(MAX_LLM_CALLS) in message
    # Within the cap it is read (the negative control): an aggregated step, named as one.
    agent["llm_call_count"] = 2
    (ep / "native" / "logs" / "trajectory.json").write_text(json.dumps(doc))
    [r] = audit(run, tmp_path / "out2", rollout_format="atif").results
    assert r["normalize"] == {"status": "ok", "message": None}


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (lambda raw: raw[:-1] + ', "steps": []}', "duplicate key 'steps'"),
        (lambda raw: raw[:-1] + ', "extra": {"n": ' + "9" * 60 + "}}", "an integer of 60 digits"),
        (lambda raw: raw[:-1] + ', "extra": ' + "[" * 300 + "]" * 300 + "}", "nested"),
        (lambda raw: raw.replace('"ATIF-v1.7"', '"ATIF-v1.7\\ud800"'), "lone surrogate"),
    ],
)
def test_the_atif_reader_is_the_strict_reader(tmp_path: Path, text: Any, named: str) -> None:
    run, ep, doc = _atif_episode(tmp_path)
    (ep / "native" / "logs" / "trajectory.json").write_text(text(json.dumps(doc)))
    message, _ = _audit_message(run, tmp_path / "out")
    assert "not an ATIF trajectory" in message and named in message


def test_a_linked_trajectory_or_native_folder_is_never_read(tmp_path: Path) -> None:
    run, ep, doc = _atif_episode(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "trajectory.json").write_text(json.dumps(doc))
    (ep / "native" / "logs" / "trajectory.json").symlink_to(outside / "trajectory.json")
    (ep / "native" / "a-link").symlink_to(outside)
    assert find_atif(ep) is None
    message, r = _audit_message(run, tmp_path / "out")
    assert "no trajectory.json" in message
    kinds = {(f["kind"], f["path"]) for f in r["collection"]["findings"]}
    assert ("symlink", "native/logs/trajectory.json") in kinds
    with pytest.raises(FormatError, match="links are not followed"):
        load_atif(ep / "native" / "logs" / "trajectory.json")


def _deep(root: Path, levels: int, leaf: str = "leaf.txt") -> None:
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(levels):
            with contextlib.suppress(FileExistsError):
                os.mkdir("d", dir_fd=fd)
            nxt = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nxt
        os.close(os.open(leaf, os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
    finally:
        os.close(fd)


def test_the_copy_stops_at_the_one_depth_cap_with_a_finding(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    _deep(src, 1500)
    _deep(src, MAX_TREE_DEPTH - 1, "kept.txt")  # the negative control: at the cap, copied
    c = Collection()
    c.copy_tree(src, tmp_path / "dest", "native")
    assert [f.kind for f in c.findings] == ["too_deep"]
    assert len(c.findings[0].path) <= 500
    assert (tmp_path / "dest" / Path(*["d"] * (MAX_TREE_DEPTH - 1)) / "kept.txt").is_file()


def test_the_tree_hash_holds_no_descriptor_per_level_past_the_cap(tmp_path: Path) -> None:
    _deep(tmp_path, 1500)
    (tmp_path / "z.txt").write_text("z")
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(256, hard), hard))
    try:
        walked = list(walk(tmp_path))
        hashes = TreeHashes(tmp_path)
        assert hashes.changed() == []
        hashes.close()
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    deep = "d/" * (MAX_TREE_DEPTH + 1)
    assert (deep, "not-a-file:40000") in walked
    assert [rel for rel, _ in walked] == sorted(rel for rel, _ in walked)
    assert walked[-1][0] == "z.txt"
