"""`export` writes only what its own reader reads back: an episode whose trajectory would be refused (by the strict
reader's number, depth or byte caps) or would say something other than its rollout is skipped by name, never
written with "exported" and exit 0."""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from orchestrator.atif import ATIF_NAME, export_atif, files, load_atif, read_atif_rollout, rollout_to_atif, write
from orchestrator.atif.core import as_object
from orchestrator.atif.write import TooLarge
from orchestrator.audit import find_episodes
from orchestrator.cli import app
from tests.unit.checks.conftest import FIXTURES

_EP = ("reference", "tool_success")


def _rollout() -> dict[str, Any]:
    return dict(json.loads((FIXTURES / "tool_success" / "rollout.json").read_text()))


def _run(tmp_path: Path, mutate: Callable[[dict[str, Any]], None]) -> Path:
    run = tmp_path / "run"
    ep = run.joinpath(*_EP)
    shutil.copytree(FIXTURES / "tool_success", ep)
    rollout = _rollout()
    mutate(rollout)
    (ep / "rollout.json").write_text(json.dumps(rollout))
    return run


def _export(tmp_path: Path, mutate: Callable[[dict[str, Any]], None]) -> tuple[files.ExportResult, Path]:
    out = tmp_path / "atif"
    return export_atif(find_episodes(_run(tmp_path, mutate)), out), out


def _first_tool_call(r: dict[str, Any]) -> dict[str, Any]:
    call: dict[str, Any] = r["invocations"][0]["conversation"][2]["tool_calls"][0]
    return call


def _assert_skipped(res: files.ExportResult, out: Path, why: str) -> None:
    assert res.written == []
    assert len(res.skipped) == 1 and res.skipped[0].startswith("reference/tool_success: "), res.skipped
    assert why in res.skipped[0], res.skipped
    # Nothing of the episode is left: no trajectory, and no evidence folder an audit would take for an episode.
    assert not out.joinpath(*_EP).exists()


# B1: the strict reader's numbers. json.loads took NaN, 1e400 and a 100-digit integer into the core arguments.
@pytest.mark.parametrize(
    "arguments",
    ['{"command": "ls", "n": NaN}', '{"command": "ls", "n": 1e400}', '{"command": "ls", "n": ' + "9" * 100 + "}"],
    ids=["nan", "overflow", "long_int"],
)
def test_argument_text_the_strict_reader_refuses_stays_text_and_the_export_reads_back(
    tmp_path: Path, arguments: str
) -> None:
    assert as_object(arguments) == {}  # no object, as any other text that is not one

    def mutate(r: dict[str, Any]) -> None:
        _first_tool_call(r)["arguments"] = arguments

    res, out = _export(tmp_path, mutate)
    assert res.skipped == [] and len(res.written) == 1
    doc = load_atif(res.written[0])
    [tc, *_] = doc["steps"][2]["tool_calls"]
    assert tc["arguments"] == {}
    assert tc["extra"]["harness_probe"]["arguments_raw"] == arguments  # the history's own text, kept
    rollout, why = read_atif_rollout(out.joinpath(*_EP), "reference")
    assert why is None and rollout is not None


def test_token_totals_past_the_readers_digits_skip_the_episode(tmp_path: Path) -> None:
    def mutate(r: dict[str, Any]) -> None:
        for call in r["model_calls"]:  # 40 digits each (the reader's most): their total has 41
            call["token_stats"]["prompt"] = int("9" * 40)

    res, out = _export(tmp_path, mutate)
    _assert_skipped(res, out, "ATIF export of reference/tool_success is not valid: $: its reader would refuse it:")
    assert "an integer of 41 digits (more than 40)" in res.skipped[0]


def _nested(levels: int) -> Any:
    value: Any = "x"
    for _ in range(levels):
        value = {"a": value}
    return value


def test_a_tool_record_nested_within_the_rollouts_depth_but_past_the_trajectorys_is_skipped(tmp_path: Path) -> None:
    def mutate(r: dict[str, Any]) -> None:
        # 124 levels read in the rollout; copied under a step's tool call, the record is 132 deep.
        r["tool_calls"][0]["arguments"] = _nested(124)
        _first_tool_call(r)["arguments"] = "not json"

    res, out = _export(tmp_path, mutate)
    _assert_skipped(res, out, "its reader would refuse it: nested 132 levels deep (more than 128)")


def test_the_export_command_names_the_skipped_episode_and_exports_nothing(tmp_path: Path) -> None:
    def mutate(r: dict[str, Any]) -> None:
        r["tool_calls"][0]["arguments"] = _nested(124)
        _first_tool_call(r)["arguments"] = "not json"

    out = tmp_path / "atif"
    res = CliRunner().invoke(app, ["export", str(_run(tmp_path, mutate)), "-o", str(out)])
    assert res.exit_code == 2, res.output
    assert "skipped reference/tool_success: ATIF export of reference/tool_success is not valid" in res.output
    assert "exported" not in res.output.replace("nothing exported", "")
    assert not list(tmp_path.rglob(ATIF_NAME))


# B3: a trajectory keeps one record per id; the last of two would silently stand for both.
@pytest.mark.parametrize(
    ("records", "key", "rid"),
    [("model_calls", "model_call_id", "mc-1"), ("tool_calls", "tool_call_id", None)],
)
def test_a_rollout_with_a_duplicate_record_id_is_skipped_by_name(
    tmp_path: Path, records: str, key: str, rid: str | None
) -> None:
    rid = rid or _rollout()["tool_calls"][0]["tool_call_id"]

    def mutate(r: dict[str, Any]) -> None:
        first = next(rec for rec in r[records] if rec[key] == rid)
        twin = copy.deepcopy(first)
        if records == "model_calls":
            twin.update(status_code=500, error_category="server")
        else:
            twin["output"] = "another run of it"
        r[records].append(twin)

    res, out = _export(tmp_path, mutate)
    _assert_skipped(res, out, f"{key} {rid!r} appears twice in rollout.json")
    assert res.skipped == [f"reference/tool_success: {key} {rid!r} appears twice in rollout.json"]


# B2: every history mention of a tool call copies its record whole; N mentions of an M-byte record is N x M bytes.
def _amplified(r: dict[str, Any]) -> None:
    rec = r["tool_calls"][0]
    rec["output"] = "O" * 20_000
    tc = {"tool_call_id": rec["tool_call_id"], "tool_name": rec["tool_name"], "arguments": rec["arguments"]}
    conv = r["invocations"][0]["conversation"]
    conv[2:] = [{"role": "assistant", "content": None, "tool_calls": [tc]}] * 100


def test_the_writer_stops_once_the_copied_records_pass_the_readers_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    rollout = _rollout()
    _amplified(rollout)
    assert len(json.dumps(rollout_to_atif(rollout))) > 2_000_000  # 100 copies of a 20 KB record
    monkeypatch.setattr(write, "MAX_FILE_BYTES", 1_000_000)
    with pytest.raises(TooLarge, match="more than the 1000000-byte cap its reader reads"):
        rollout_to_atif(rollout)


def test_an_export_past_the_readers_byte_cap_is_skipped_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(write, "MAX_FILE_BYTES", 1_000_000)
    res, out = _export(tmp_path, _amplified)
    _assert_skipped(res, out, "more than the 1000000-byte cap its reader reads")


def test_a_trajectory_text_past_the_byte_cap_is_skipped_though_its_copies_are_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The copies are within the cap; the text (indented, with everything else) is not.
    monkeypatch.setattr(files, "MAX_FILE_BYTES", 5_000)
    res, out = _export(tmp_path, lambda r: None)
    _assert_skipped(res, out, "more than the 5000-byte cap its reader reads")
    assert "the trajectory would be " in res.skipped[0]
