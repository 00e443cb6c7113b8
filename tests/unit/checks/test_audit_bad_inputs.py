"""Offline bad-input set for `audit`: every hostile saved episode gives exit 0/1/2 and a named message, no traceback."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.evidence import load_json
from orchestrator.evidence.markers import read_markers
from tests.unit.checks.conftest import FIXTURES

CLI = Path(sys.executable).with_name("harness-probe")
Mutate = Callable[[Path, Path], None]  # (source run dir, its one episode dir)


def _run(tmp_path: Path, mutate: Mutate, *extra: str) -> tuple[int, str]:
    src = tmp_path / "saved"
    ep = src / "reference" / "tool_success"
    shutil.copytree(FIXTURES / "tool_success", ep)
    mutate(src, ep)
    out = tmp_path / "out"
    # The real command line, in its own process: exit codes and stderr as a user sees them.
    proc = subprocess.run(
        [str(CLI), "audit", str(src), "-o", str(out), *extra], capture_output=True, text=True, timeout=300, check=False
    )
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return proc.returncode, proc.stderr


def _write(name: str, data: bytes) -> Mutate:
    return lambda src, ep: (ep / name).write_bytes(data)


def _nested(depth: int) -> bytes:
    return b'{"schema": "probe-rollout/v1", "x": ' + b"[" * depth + b"]" * depth + b"}"


def _truncate(name: str) -> Mutate:
    def go(src: Path, ep: Path) -> None:
        data = (ep / name).read_bytes()
        (ep / name).write_bytes(data[: len(data) // 2])

    return go


def _fifo(name: str) -> Mutate:
    def go(src: Path, ep: Path) -> None:
        (ep / name).unlink(missing_ok=True)
        os.mkfifo(ep / name)

    return go


def _link(name: str, target: str) -> Mutate:
    def go(src: Path, ep: Path) -> None:
        path = ep / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() or path.is_symlink():
            path.unlink()
        path.symlink_to(target)

    return go


def _big_line(src: Path, ep: Path) -> None:
    with (ep / "witness.jsonl").open("ab") as f:
        f.write(b'{"x": "' + b"y" * (100 << 20) + b"\n")


# (mutation, expected exit code, words the reason must contain: in stderr or in the episode's result)
CASES: dict[str, tuple[Mutate, int, str]] = {
    "truncated witness": (_truncate("witness.jsonl"), 1, "not JSON"),
    "truncated rollout": (_truncate("rollout.json"), 1, "not JSON"),
    "binary rollout": (_write("rollout.json", bytes(range(256)) * 64), 1, "not JSON"),
    "100 MB line": (_big_line, 1, "not JSON"),
    "deep rollout": (_write("rollout.json", _nested(3000)), 1, "nested 3001 levels"),
    "deep witness line": (lambda s, e: (e / "witness.jsonl").write_bytes(_nested(3000)), 1, "nested 3001 levels"),
    "huge integer": (
        _write("rollout.json", b'{"schema": "probe-rollout/v1", "n": ' + b"9" * 100_000 + b"}"),
        1,
        "digits",
    ),
    "NaN": (_write("rollout.json", b'{"schema": "probe-rollout/v1", "n": NaN}'), 1, "NaN"),
    "duplicate keys": (_write("rollout.json", b'{"schema": "probe-rollout/v1", "schema": "x"}'), 1, "duplicate key"),
    "FIFO rollout": (_fifo("rollout.json"), 1, "not followed or copied"),
    "witness links to a host file": (_link("witness.jsonl", "/etc/passwd"), 1, "not followed or copied"),
    "summary of the wrong type": (_write("../../summary.json", b'{"full_suite": "yes"}'), 2, "summary.json"),
    "summary that is a list": (_write("../../summary.json", b"[1, 2]"), 2, "summary.json"),
    "summary nested deep": (_write("../../summary.json", b"[" * 5000 + b"]" * 5000), 2, "nested"),
    "suite of the wrong shape": (_write("../../suite.json", b'{"schema": "suite/v1", "run_id": 5}'), 2, "suite.json"),
    "scenario that is garbage": (_write("scenario.json", b"\x00\x01garbage"), 2, "not JSON"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input(tmp_path: Path, case: str) -> None:
    mutate, expected, words = CASES[case]
    code, err = _run(tmp_path, mutate)
    assert code == expected, err[-2000:]
    result_file = tmp_path / "out" / "reference" / "tool_success" / "scenario_result.json"
    said = err + (result_file.read_text() if result_file.is_file() else "")
    assert words in said, said[-2000:]
    if code == 2 and not result_file.is_file():
        assert "harness-probe:" in err


def test_links_fifos_and_loops_in_native_are_never_followed(tmp_path: Path) -> None:
    canary = tmp_path / "canary-outside"
    canary.write_text("SECRET-CANARY")

    def plant(src: Path, ep: Path) -> None:
        native = ep / "native"
        native.mkdir()
        (native / "up").symlink_to("..")
        (native / "loop").symlink_to("loop")
        (native / "root").symlink_to("/")
        (native / "canary").symlink_to(canary)
        os.mkfifo(native / "fifo")
        (native / "real.txt").write_text("kept")
        (ep / "markers" / "up").symlink_to("../..")

    code, _ = _run(tmp_path, plant)
    assert code == 0
    out = tmp_path / "out"
    copied = [p for p in out.rglob("*")]
    assert not any(p.is_symlink() for p in copied)
    assert len(copied) < 40
    assert (out / "reference" / "tool_success" / "native" / "real.txt").read_text() == "kept"
    assert not any("SECRET-CANARY" in p.read_text(errors="replace") for p in copied if p.is_file())
    result = load_json(out / "reference" / "tool_success" / "scenario_result.json", "scenario-result/v1")
    kinds = sorted((f["kind"], f["path"]) for f in result["collection"]["findings"])
    assert ("fifo", "native/fifo") in kinds and ("symlink", "native/up") in kinds and ("symlink", "markers/up") in kinds
    assert result["verdict"] == "pass"  # the evidence itself is intact
    record = json.loads((out / "audit.json").read_text())
    assert "reference/tool_success/native/real.txt" in record["inputs"]
    assert "reference/tool_success/native/canary" not in record["inputs"]  # a link: never read, never hashed


def test_the_collection_caps_of_the_saved_run_are_given_on_the_command_line(tmp_path: Path) -> None:
    # Two files: the witness and the markers folder; the markers themselves are past the cap.
    code, err = _run(tmp_path, lambda src, ep: None, "--collect-max-files", "2")
    assert code == 1, err[-2000:]
    result = load_json(tmp_path / "out" / "reference" / "tool_success" / "scenario_result.json", "scenario-result/v1")
    assert [f["kind"] for f in result["collection"]["findings"]] == ["file_cap"]
    assert result["collection"]["limits"]["max_files"] == 2
    assert read_markers(tmp_path / "out" / "reference" / "tool_success" / "markers.json") == {}
