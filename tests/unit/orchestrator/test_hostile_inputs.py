"""Low findings of issue 31: scenario files within a budget, `ci select` paths normalised and --base never an
option, a change list that is not UTF-8 a named error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from orchestrator.ci.select import GitError, changed_paths, normalise, read_change_list, select
from orchestrator.evidence import FormatError
from orchestrator.resources import scenarios_dir
from orchestrator.scenarios import MAX_SCENARIO_DEPTH, load_scenario

HP = str(Path(sys.executable).with_name("harness-probe"))
BASE = (scenarios_dir() / "tool_success.yaml").read_text()


def _scenario(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "tool_success.yaml"
    path.write_text(text)
    return path


def test_the_shipped_scenario_still_loads(tmp_path: Path) -> None:
    assert load_scenario(_scenario(tmp_path, BASE)).name == "tool_success"  # the negative control


@pytest.mark.parametrize(
    ("text", "named"),
    [
        # 103 KiB of nested aliases were 9,000,000 tool calls.
        (BASE.replace("faults: []", "faults: []\nx: &a [1, 2]\ny: [*a, *a]"), "anchors and aliases are refused"),
        (
            BASE.replace("faults: []", "faults: " + "[" * 50_000 + "]" * 50_000),
            f"more than {MAX_SCENARIO_DEPTH} levels",
        ),
        (BASE.replace("usage: true", "usage: .nan"), "not a scenario's data"),
        (BASE.replace("tool_calls: [{exit_code: 0}]", "tool_calls: [{exit_code: " + "9" * 60 + "}]", 1), "60 digits"),
        (BASE + "#" * (1 << 20), "more than 1048576"),
        # Past Python's 4,300 digits PyYAML raises ValueError (it was an internal error, exit 2 and a crash file).
        (BASE + "extra: " + "9" * 5000 + "\n", "not YAML: Exceeds the limit"),
        # YAML keeps the last of two keys: a second `faults: []` would silently take every fault away.
        (BASE + "faults: []\n", "line 14: duplicate key 'faults'"),
        (BASE + '"name": other\n', "duplicate key 'name'"),
        # A NUL in the task failed the harness's exec ("invalid argument"): judged as the harness's failure.
        (BASE.replace("task: ", 'task: "nul \\0 here" #', 1), "holds a NUL character"),
        (BASE.replace("model: probe-model", 'model: "a\\0b"'), r"\$.model: holds a NUL character"),
        # Each of these passed the host and then stopped the proxy at its start (an unnamed set-up error), or was
        # played to an honest harness that does not take it (a harness_profile), or crashed every reply (1e308 s).
        (BASE.replace("model: probe-model", 'model: ""'), r"\$.model: '' should be non-empty"),
        (BASE + "harness_profile: {delivery: keystrokes}\n", r"\$.harness_profile: is written by harness-probe"),
        (
            BASE.replace("faults: []", "faults: [{attempt: 0, kind: quota, requests: 1, window_seconds: 1.0e+308}]"),
            "greater than the maximum of 604800",
        ),
        (BASE.replace("[{exit_code: 0}]", "[" + ", ".join(["{}"] * 1001) + "]", 1), "is too long"),
        (
            BASE.replace("faults: []", "faults: [{attempt: 0, kind: http_error, status: 500, attempt: 1}]"),
            "key 'attempt'",
        ),
    ],
)
def test_what_a_scenario_file_may_not_hold_is_refused_at_load(tmp_path: Path, text: str, named: str) -> None:
    with pytest.raises(FormatError, match=named):
        load_scenario(_scenario(tmp_path, text))


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        ("docs/../orchestrator/suite.py", "orchestrator/suite.py"),
        ("./images//pi/Dockerfile", "images/pi/Dockerfile"),
        ("  docs/a.md  ", "docs/a.md"),
        ("../outside", "../outside"),  # out of the repository: kept, and selects all
        ("", None),
    ],
)
def test_changed_paths_are_normalised(raw: str, path: str | None) -> None:
    assert normalise(raw) == path


def test_a_path_through_docs_selects_what_it_names() -> None:
    assert select(["docs/../orchestrator/suite.py"], ["pi", "hermes"]).all
    assert not select(["docs/guide.md"], ["pi", "hermes"]).all  # the negative control: documentation


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git[:3], "init", "-q"], check=True)
    (repo / "a.txt").write_text("a")
    subprocess.run([*git, "add", "a.txt"], check=True)
    subprocess.run([*git, "commit", "-qm", "a"], check=True)
    (repo / "b.txt").write_text("b")
    subprocess.run([*git, "add", "b.txt"], check=True)
    subprocess.run([*git, "commit", "-qm", "b"], check=True)
    return repo


def test_base_is_a_revision_never_an_option(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    assert changed_paths("HEAD~1", repo) == ["b.txt"]  # the negative control
    target = tmp_path / "written-by-git"
    for base in (f"--output={target}", "-p", "no-such-rev", ""):
        with pytest.raises(GitError, match="is not a revision"):
            changed_paths(base, repo)
    assert not target.exists()
    res = subprocess.run(
        [HP, "ci", "select", "--repo", str(repo), f"--base=--output={target}"], capture_output=True, text=True
    )
    assert res.returncode == 2 and "is not a revision" in res.stderr and not target.exists(), res.stderr


def test_a_change_list_that_is_not_utf8_is_a_named_error(tmp_path: Path) -> None:
    assert read_change_list(b"a\nb\n", "x") == ["a", "b"]
    with pytest.raises(GitError, match=r"list: line 2 is not UTF-8 \(byte 0xff\)"):
        read_change_list(b"docs/a.md\n\xff.md\n", "list")
    listing = tmp_path / "changed.txt"
    listing.write_bytes(b"docs/a.md\n\xff\xfe.py\n")
    res = subprocess.run([HP, "ci", "select", "--changed-file", str(listing)], capture_output=True, text=True)
    assert res.returncode == 2 and "line 2 is not UTF-8" in res.stderr and "internal error" not in res.stderr
    res = subprocess.run([HP, "ci", "select"], input=b"\xff\n", capture_output=True)
    assert res.returncode == 2 and b"stdin: line 1 is not UTF-8" in res.stderr


def test_a_change_list_that_never_ends_is_refused_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "changed.fifo"
    os.mkfifo(fifo)
    for listing in (fifo, Path("/dev/zero")):
        # A FIFO with no writer was waited on for ever; /dev/zero read until the kernel killed the process.
        res = subprocess.run(
            [HP, "ci", "select", "--changed-file", str(listing)], capture_output=True, text=True, timeout=60
        )
        assert res.returncode == 2 and "not a regular file" in res.stderr, res.stderr
    res = subprocess.run([HP, "ci", "select"], input=b"docs/a.md\n" * (2 << 20), capture_output=True, timeout=60)
    assert res.returncode == 2 and b"stdin: more than 16777216 bytes" in res.stderr, res.stderr
    huge = tmp_path / "huge.txt"
    with huge.open("wb") as f:
        f.truncate((16 << 20) + 1)  # sparse: a regular file one byte past the cap, read only that far
    res = subprocess.run([HP, "ci", "select", "--changed-file", str(huge)], capture_output=True, timeout=60)
    assert res.returncode == 2 and f"--changed-file {huge}: more than 16777216 bytes".encode() in res.stderr
    listed = tmp_path / "changed.txt"
    listed.write_bytes(b"docs/a.md\n")
    (tmp_path / "link.txt").symlink_to(listed)  # a link to a list is a list: only what never ends is refused
    res = subprocess.run([HP, "ci", "select", "--changed-file", str(tmp_path / "link.txt")], capture_output=True)
    assert res.returncode == 0, res.stderr


def test_what_the_host_accepts_the_proxy_plays(tmp_path: Path) -> None:
    """The proxy reads the scenario again, as JSON, by rules of its own: a file the host let through and the proxy
    refused stopped the pod at its start, with nothing naming the file."""
    from proxy_addons.scenario import parse_scenario

    edges = [
        BASE.replace("[{exit_code: 0}]", "[{exit_code: 1.0}]", 1),  # 1.0 is the integer 1 to the schema
        BASE.replace("faults: []", "faults: [{attempt: 1.0, kind: http_error, status: 500.0}]"),
        BASE.replace("faults: []", "faults: [{attempt: 0, kind: cut, after_events: 2.0}]"),
        BASE + "context_window: 2048.0\n",
    ]
    shipped = [p.read_text() for p in sorted(scenarios_dir().glob("*.yaml"))]
    for i, text in enumerate([*edges, *shipped]):
        folder = tmp_path / str(i)
        folder.mkdir()
        name = yaml.safe_load(text)["name"]
        scenario = load_scenario(_scenario_named(folder, name, text))
        parse_scenario(json.loads(scenario.provider_json()))  # raises ScenarioError where the proxy would refuse
        assert i >= len(edges) or "1.0" not in scenario.provider_json().decode()


def _scenario_named(folder: Path, name: str, text: str) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(text)
    return path
