"""`merge`: shards into one run with one summary; overlapping or inconsistent inputs are refused by name."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from orchestrator.evidence import load_json
from orchestrator.merge import IncompleteShard, InconsistentShards, OverlappingShards, UnsafeShard, merge_runs
from orchestrator.report import build_summary, summary_bytes, without_timestamps
from orchestrator.runtime.collect import MAX_TREE_DEPTH
from tests.unit.report.conftest import checks, make_suite, result, write_run

T0, T1 = "2025-01-01T12:00:00.000Z", "2025-01-01T12:30:00.000Z"
H, S = ["hermes", "reference"], ["tool_failure", "tool_success"]
GRID = [(h, s) for h in H for s in S]


def _verdict(h: str, s: str) -> str:
    return "fail" if (h, s) == ("reference", "tool_failure") else "pass"


def _results(cells: list[tuple[str, str]], run_id: str) -> list[dict[str, Any]]:
    out = []
    for h, s in cells:
        bad = _verdict(h, s) == "fail"
        cs = checks(tools__witness_output=("fail", ["differs"])) if bad else checks()
        out.append(result(h, s, _verdict(h, s), cs, run_id=run_id))
    return out


def _shard(root: Path, index: int, count: int, **suite_changes: Any) -> Path:
    run_id = f"20250101T12000{index}-shard{index}"
    cells = [c for k, c in enumerate(GRID) if k % count == index - 1]
    suite = make_suite(H, S, run_id=run_id)
    suite.update(shard={"index": index, "count": count}, episodes=[{"harness": h, "scenario": s} for h, s in cells])
    suite.update(suite_changes)
    run = write_run(root / f"shard{index}", suite, _results(cells, run_id))
    (run.dir / "summary.json").write_bytes(summary_bytes(build_summary(run.dir, suite, run.results, True, T0, T1)))
    return run.dir


def _table(summary: dict[str, Any]) -> dict[tuple[str, str], Any]:
    return {
        (h["name"], e["scenario"]): (e["verdict"], [(c["id"], c["status"]) for c in e["checks"]])
        for h in summary["harnesses"]
        for e in h["scenarios"]
    }


def test_shards_merge_into_the_full_run(tmp_path: Path) -> None:
    one, two = _shard(tmp_path, 1, 2), _shard(tmp_path, 2, 2)
    shard_summaries = [json.loads((d / "summary.json").read_text()) for d in (one, two)]
    assert [s["exit_code"] for s in shard_summaries] == [1, 0]  # each shard alone: its slice only, no missing
    res = merge_runs([two, one], tmp_path / "merged")
    summary = load_json(tmp_path / "merged" / "summary.json", "probe-summary/v1")
    full = write_run(tmp_path / "full", make_suite(H, S), _results(GRID, make_suite(H, S)["run_id"]))
    expected = build_summary(full.dir, full.suite, full.results, True, T0, T1)
    assert _table(summary) == _table(expected)
    assert (summary["exit_code"], summary["errors"], summary["missing"]) == (1, [], [])
    assert res.exit_code == 1
    for f in ("report.md", "report.html", "junit.xml"):
        assert (tmp_path / "merged" / f).is_file()
    suite = load_json(tmp_path / "merged" / "suite.json", "suite/v1")
    assert [m["shard"]["index"] for m in suite["merged_from"]] == [1, 2]
    # Evidence copied untouched: the episode files hash the same as in their shard.
    from_shards = {k: v["evidence"] for s in shard_summaries for k, v in _episodes(s).items()}
    assert {k: v["evidence"] for k, v in _episodes(summary).items()} == from_shards
    assert without_timestamps(summary)["counts"] == without_timestamps(expected)["counts"]


def _episodes(summary: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(h["name"], e["scenario"]): e for h in summary["harnesses"] for e in h["scenarios"]}


def test_a_missing_shard_is_missing_episodes(tmp_path: Path) -> None:
    res = merge_runs([_shard(tmp_path, 1, 2)], tmp_path / "merged")
    summary = load_json(tmp_path / "merged" / "summary.json", "probe-summary/v1")
    assert res.exit_code == 2 and len(summary["missing"]) == 2


def test_overlap_is_refused(tmp_path: Path) -> None:
    one = _shard(tmp_path, 1, 2)
    with pytest.raises(OverlappingShards, match="same run"):
        merge_runs([one, one], tmp_path / "m1")
    other = _shard(tmp_path / "b", 1, 2, run_id="20250101T999999-other")
    with pytest.raises(OverlappingShards, match="shard index given twice"):
        merge_runs([one, other], tmp_path / "m2")
    assert not (tmp_path / "m1").exists() and not (tmp_path / "m2").exists()


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"tool_version": "9.9.9"}, "harness-probe version"),
        ({"images": {"proxy": {"tag": "t", "image_id": "sha256:" + "f" * 64, "inputs_sha256": "b" * 64}}},
         "image 'proxy'"),
        ({"harnesses": [{"name": "hermes", "options": {"model": "other"}}, {"name": "reference", "options": {}}]},
         "harness options 'hermes'"),
        ({"shard": {"index": 2, "count": 3}}, "shard count"),
    ],
)  # fmt: skip
def test_inconsistent_inputs_are_refused(tmp_path: Path, change: dict[str, Any], match: str) -> None:
    one = _shard(tmp_path, 1, 2)
    two = _shard(tmp_path, 2, 2, **change)
    with pytest.raises(InconsistentShards, match=match):
        merge_runs([one, two], tmp_path / "merged")


def test_unfinished_input_is_refused(tmp_path: Path) -> None:
    one = _shard(tmp_path, 1, 2)
    (one / "summary.json").unlink()
    with pytest.raises(IncompleteShard, match=r"no summary\.json"):
        merge_runs([one, _shard(tmp_path, 2, 2)], tmp_path / "merged")


def test_a_broken_episode_result_is_refused_by_name_before_anything_is_written(tmp_path: Path) -> None:
    one = _shard(tmp_path, 1, 2)
    (one / "hermes" / "tool_failure" / "scenario_result.json").write_text('{"schema": "scenario-result/v1"')
    with pytest.raises(IncompleteShard, match=r"(?s)shard1: .*hermes/tool_failure/scenario_result\.json.*not JSON"):
        merge_runs([one, _shard(tmp_path, 2, 2)], tmp_path / "merged")
    assert not (tmp_path / "merged").exists()


def test_an_episode_name_leading_out_of_the_run_is_refused(tmp_path: Path) -> None:
    # A shard's summary.json names its episodes; a name with a path in it would copy from outside the shard into
    # outside the output. The source exists there and the destination does not: only the name check stops it.
    one = _shard(tmp_path, 1, 2)
    outside = tmp_path / "outside"
    (outside / "x").mkdir(parents=True)
    summary = json.loads((one / "summary.json").read_text())
    summary["harnesses"][0]["scenarios"][0]["scenario"] = "../../outside/x"
    (one / "summary.json").write_text(json.dumps(summary))
    with pytest.raises(IncompleteShard, match=r"episode name '\.\./\.\./outside/x' is not a plain folder name"):
        merge_runs([one], tmp_path / "out" / "merged")
    assert not (tmp_path / "out").exists()


def test_an_input_broken_while_it_is_merged_leaves_no_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import orchestrator.merge as merge_mod

    one, two = _shard(tmp_path, 1, 2), _shard(tmp_path, 2, 2)
    copy = merge_mod._copy_episode

    def copy_then_break(shard: Path, where: str, src: Path, dest: Path) -> None:
        copy(shard, where, src, dest)
        (Path(dest) / "scenario_result.json").write_text("{}")

    monkeypatch.setattr(merge_mod, "_copy_episode", copy_then_break)
    with pytest.raises(IncompleteShard, match="changed while it was merged"):
        merge_runs([one, two], tmp_path / "merged")
    assert not (tmp_path / "merged").exists()


def _plant_fifo(ep: Path) -> str:
    os.mkfifo(ep / "native" / "pipe")
    return r"hermes/tool_failure/native/pipe: fifo: not a file or folder"


def _plant_link(ep: Path) -> str:
    (ep / "native" / "passwd").symlink_to("/etc/passwd")
    return r"hermes/tool_failure/native/passwd: symlink: .*'/etc/passwd'"


def _plant_sparse(ep: Path) -> str:
    with (ep / "native" / "sparse.bin").open("wb") as f:
        f.truncate(100 << 30)  # costs nothing to make; 100 GiB written dense
    return r"hermes/tool_failure/native/sparse.bin: over_cap_file: 107374182400 bytes"


def _plant_deep(ep: Path) -> str:
    fd = os.open(ep / "native", os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(1200):  # by descriptor: the path is longer than PATH_MAX
        os.mkdir("d", dir_fd=fd)
        fd, old = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd), fd
        os.close(old)
    os.close(fd)
    return rf"too_deep: more than {MAX_TREE_DEPTH + 1} folders deep"


def _plant_linked_episode(ep: Path) -> str:
    outside = ep.parent.parent.parent / "outside-episode"
    ep.rename(outside)
    ep.symlink_to(outside, target_is_directory=True)
    return r"hermes/tool_failure: symlink: .*outside-episode"


@pytest.mark.parametrize("plant", [_plant_fifo, _plant_link, _plant_sparse, _plant_deep, _plant_linked_episode])
def test_what_no_run_writes_is_refused_by_name_and_nothing_is_left(tmp_path: Path, plant: Any) -> None:
    one = _shard(tmp_path, 1, 2)
    ep = one / "hermes" / "tool_failure"
    (ep / "native").mkdir(exist_ok=True)
    (ep / "native" / "log.txt").write_text("kept")
    match = plant(ep)
    with pytest.raises(UnsafeShard, match=match):
        merge_runs([one, _shard(tmp_path, 2, 2)], tmp_path / "merged")
    assert not (tmp_path / "merged").exists()


def test_a_plain_native_folder_is_copied_whole(tmp_path: Path) -> None:
    # The negative control of the refusals above: files and folders only, merged as they were.
    one = _shard(tmp_path, 1, 2)
    (one / "hermes" / "tool_failure" / "native" / "a" / "b").mkdir(parents=True)
    (one / "hermes" / "tool_failure" / "native" / "a" / "b" / "log.txt").write_text("kept")
    merge_runs([one, _shard(tmp_path, 2, 2)], tmp_path / "merged")
    assert (tmp_path / "merged" / "hermes" / "tool_failure" / "native" / "a" / "b" / "log.txt").read_text() == "kept"


def _edit(path: Path, change: dict[str, Any]) -> None:
    path.write_text(json.dumps({**json.loads(path.read_text()), **change}))


@pytest.mark.parametrize(
    ("change", "claims"),
    [({"scenario": "tool_success"}, "hermes/tool_success"), ({"harness": "reference"}, "reference/tool_failure")],
)
def test_a_result_claiming_another_episode_than_its_folder_is_refused(
    tmp_path: Path, change: dict[str, Any], claims: str
) -> None:
    one, two = _shard(tmp_path, 1, 2), _shard(tmp_path, 2, 2)
    _edit(one / "hermes" / "tool_failure" / "scenario_result.json", change)
    with pytest.raises(IncompleteShard, match=f"claims episode {claims}, but is in the folder of hermes/tool_failure"):
        merge_runs([one, two], tmp_path / "merged")
    assert not (tmp_path / "merged").exists()


def test_a_summary_episode_its_suite_does_not_name_is_refused(tmp_path: Path) -> None:
    one, two = _shard(tmp_path, 1, 2), _shard(tmp_path, 2, 2)
    suite = json.loads((one / "suite.json").read_text())
    _edit(one / "suite.json", {"harnesses": [h for h in suite["harnesses"] if h["name"] != "reference"]})
    with pytest.raises(IncompleteShard, match=r"episode reference/tool_failure is not in its suite\.json"):
        merge_runs([one, two], tmp_path / "merged")


def test_a_shard_past_the_count_is_refused(tmp_path: Path) -> None:
    one, two = _shard(tmp_path, 1, 2), _shard(tmp_path, 2, 2)
    _edit(two / "suite.json", {"shard": {"index": 7, "count": 2}})
    with pytest.raises(InconsistentShards, match="shard 7 of 2 does not exist"):
        merge_runs([one, two], tmp_path / "merged")


def test_a_shard_with_an_unsharded_run_is_refused(tmp_path: Path) -> None:
    one, two = _shard(tmp_path, 1, 2), _shard(tmp_path, 2, 2)
    suite = json.loads((one / "suite.json").read_text())
    del suite["shard"]
    (one / "suite.json").write_text(json.dumps(suite))
    with pytest.raises(InconsistentShards, match="cannot be merged with unsharded runs"):
        merge_runs([one, two], tmp_path / "merged")
