"""The generic ATIF harness: options checked up front, the command filled in shell-quoted, a missing or broken
trajectory a normalize finding."""

from __future__ import annotations

import json
import shlex
from dataclasses import replace
from pathlib import Path

import pytest

from orchestrator.harnesses import NormalizeError, get_harness
from orchestrator.harnesses.atif import OPTIONS, AtifHarness
from orchestrator.harnesses.base import LaunchContext
from orchestrator.scenarios import load_scenario

GOOD = {"image": "reference", "command": "agent --task {task} --out {trajectory}", "trajectory": "/home/probe/t.json"}


def test_registered_and_listed_without_options() -> None:
    assert isinstance(get_harness("atif", GOOD), AtifHarness)
    assert AtifHarness().options_declared == OPTIONS  # `harnesses list` builds it bare


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"image": "reference"}, "needs option(s) command, trajectory"),
        ({**GOOD, "command": "x {nope}"}, "unknown placeholder(s) ['nope']"),
        ({**GOOD, "command": "x {"}, "not a valid template"),
        ({**GOOD, "trajectory": "relative.json"}, "not an absolute path"),
        ({**GOOD, "trajectory": "/etc/t.json"}, "not an absolute path below"),
        ({**GOOD, "trajectory": "/home/probe/../../etc/t.json"}, "not an absolute path below"),
        ({**GOOD, "delivery": "carrier-pigeon"}, "delivery='carrier-pigeon' is not one of"),
        ({**GOOD, "colour": "red"}, "no option(s) ['colour']"),
        # These fail only when filled: that was at launch, after the images were built, every episode an error.
        ({**GOOD, "writable": "/opt/x,/proc/self"}, "writable path '/proc/self' is below /proc"),
        ({**GOOD, "writable": "/dev"}, "is below /dev"),
        ({**GOOD, "writable": "/probe/markers"}, "is below /probe"),
        ({**GOOD, "command": "x {task:d}"}, "not a valid template: Unknown format code 'd'"),
        ({**GOOD, "command": "x {task!z}"}, "not a valid template: Unknown conversion specifier z"),
        ({**GOOD, "command": "x {task:{home}}"}, "not a valid template: Invalid format specifier"),
    ],
)
def test_bad_options_are_named(options: dict[str, str], named: str) -> None:
    with pytest.raises(ValueError) as err:
        AtifHarness(options)
    assert named in str(err.value)


def test_task_is_quoted_so_it_cannot_inject() -> None:
    scenario = load_scenario("tool_success")
    hostile = replace(scenario, data={**scenario.data, "task": "x'; rm -rf / #$(id)"})
    launch = AtifHarness(GOOD).launch(hostile, LaunchContext())
    assert launch.command[:2] == ["sh", "-c"]
    argv = shlex.split(launch.command[2].removesuffix(" </dev/null"))
    assert argv == ["agent", "--task", hostile.task, "--out", "/home/probe/t.json"]


def test_native_path_and_image_come_from_the_options() -> None:
    h = AtifHarness({**GOOD, "image": "example.org/agent:1", "delivery": "keystrokes"})
    assert h.native_paths == ("/home/probe/t.json",)
    assert h.prebuilt_image() == "example.org/agent:1"
    assert AtifHarness(GOOD).prebuilt_image() is None  # one of ours: built as usual
    assert h.harness_profile() == {"delivery": "keystrokes"}


def test_missing_or_non_atif_trajectory_is_a_normalize_finding(tmp_path: Path) -> None:
    h = AtifHarness(GOOD)
    with pytest.raises(NormalizeError, match=r"wrote no ATIF trajectory at /home/probe/t\.json"):
        h.normalize(tmp_path)
    (tmp_path / "t.json").write_text(json.dumps({"steps": []}))
    with pytest.raises(NormalizeError, match="is not an ATIF trajectory"):
        h.normalize(tmp_path)


def test_an_atif_trajectory_reads_with_its_gaps_named(tmp_path: Path) -> None:
    doc = {
        "schema_version": "ATIF-v1.6",
        "session_id": "s1",
        "agent": {"name": "someagent", "version": "1.0"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "do it"},
            {
                "step_id": 2,
                "source": "agent",
                "message": "done",
                "metrics": {"prompt_tokens": 3, "completion_tokens": 2},
            },
        ],
    }
    (tmp_path / "t.json").write_text(json.dumps(doc))
    rollout = AtifHarness(GOOD).normalize(tmp_path)
    assert rollout["harness"]["name"] == "someagent"
    assert rollout["outcome"]["final_answer"] == "done"
    assert "model_calls.failed_attempts_unrecordable" in {g["code"] for g in rollout["gaps"]}


def test_writable_paths_join_the_defaults_and_may_hold_the_trajectory() -> None:
    h = AtifHarness({**GOOD, "writable": "/logs/agent", "trajectory": "/logs/agent/trajectory.json"})
    assert h.writable_paths == {"/home/probe": "1g", "/tmp": "512m", "/logs/agent": "256m"}
    for bad in ("relative", "/", "/a/../etc"):
        with pytest.raises(ValueError, match="writable path"):
            AtifHarness({**GOOD, "writable": bad})


def test_an_image_option_that_walks_out_of_images_is_no_folder_of_ours() -> None:
    from orchestrator.images import BuildError, image_folder

    assert AtifHarness({**GOOD, "image": "reference"}).prebuilt_image() is None  # images/reference: built
    harness = AtifHarness({**GOOD, "image": "../images/reference"})  # a folder with a Dockerfile, reached by ..
    assert harness.prebuilt_image() == "../images/reference"  # the engine's to find (or name as missing)
    with pytest.raises(BuildError, match="is not an image name"):
        image_folder("../reference")
