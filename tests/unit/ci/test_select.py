"""`ci select` on a table of changed-path sets: own files select one harness, shared ones all, docs none."""

from __future__ import annotations

import json
import os
import pty
import subprocess
from pathlib import Path

import pytest

from orchestrator.ci.select import GitError, changed_paths, image_parents, select
from orchestrator.evidence import validate
from orchestrator.harnesses import HARNESSES, IMAGE_FROM_OPTIONS, get_harness
from orchestrator.resources import checkout_root
from tests.unit.ci.conftest import HP, hp

REPO_ROOT = checkout_root() or Path(__file__).resolve().parents[3]

ALL = sorted(set(HARNESSES) - IMAGE_FROM_OPTIONS)
NPM = ["claude-code", "cline", "codex", "copilot", "gemini-cli", "kilo", "openclaw", "opencode", "pi", "qwen-code"]

TABLE: list[tuple[str, list[str], list[str]]] = [
    ("nothing changed", [], []),
    ("docs only", ["README.md", "docs/design.md", "proxy_addons/README.md"], []),
    ("results index page", ["docs/results/README.md"], []),
    ("adapter package", ["orchestrator/harnesses/hermes/rollout.py"], ["hermes"]),
    (
        "adapter module + its normalizer module",
        ["orchestrator/harnesses/mini_swe_agent_normalize.py"],
        ["mini-swe-agent"],
    ),
    ("reference adapter", ["orchestrator/harnesses/reference.py"], ["reference"]),
    ("the store OpenCode and Kilo share", ["orchestrator/harnesses/opencode_family/calls.py"], ["kilo", "opencode"]),
    (
        "Kilo's own files",
        ["orchestrator/harnesses/kilo/__init__.py", "images/kilo/package-lock.json", "tests/fixtures/native/kilo/x"],
        ["kilo"],
    ),
    ("image folder", ["images/pi/package-lock.json"], ["pi"]),
    ("image lock file of one harness", ["images/hermes/requirements.lock"], ["hermes"]),
    ("fixtures", ["tests/fixtures/native/codex/retry_429/scenario.json"], ["codex"]),
    ("golden", ["tests/golden/opencode/verdicts.json"], ["opencode"]),
    ("results page", ["docs/results/claude-code.md"], ["claude-code"]),
    ("saved results run", ["docs/results/runs/pi/summary.json"], ["pi"]),
    (
        "harness tests",
        ["tests/harnesses/test_codex_podman.py", "tests/unit/harnesses/test_pi_launch.py"],
        ["codex", "pi"],
    ),
    (
        "reference agent",
        ["images/reference/probe_reference/modes.py", "tests/unit/reference_agent/test_modes.py"],
        ["reference"],
    ),
    ("shared parent image", ["images/node/Dockerfile"], NPM),
    (
        "a harness named with a dash, in every place it owns",
        [
            "orchestrator/harnesses/gemini_cli/calls.py",
            "images/gemini-cli/package-lock.json",
            "tests/fixtures/native/gemini-cli/retry_429/checks.json",
            "tests/golden/gemini-cli/verdicts.json",
            "tests/unit/harnesses/test_gemini_cli_otel.py",
        ],
        ["gemini-cli"],
    ),
    ("the OpenTelemetry reader adapters share", ["orchestrator/harnesses/otel/read.py"], ALL),
    (
        "two harnesses and docs",
        ["orchestrator/harnesses/pi/calls.py", "docs/results/hermes.md", "README.md"],
        ["hermes", "pi"],
    ),
    ("a harness's second golden file", ["tests/harnesses/test_codex_podman.py"], ["codex"]),
    ("the CI record of the last passing commit", [".ci/last-landed"], []),
    ("the CI entry point beside it", [".ci/last-landed", ".ci/run"], ALL),
    ("the phases driver is shared", ["tests/phases.py"], ALL),
    ("proxy addon", ["proxy_addons/chat.py"], ALL),
    ("checks", ["orchestrator/checks/tools.py"], ALL),
    ("scenario", ["scenarios/retry_429.yaml"], ALL),
    ("runtime", ["orchestrator/runtime/docker.py"], ALL),
    ("base image", ["images/base/Dockerfile"], ALL),
    ("proxy image lock", ["images/proxy/requirements.lock"], ALL),
    ("packaging", ["pyproject.toml"], ALL),
    ("Makefile", ["Makefile"], ALL),
    ("root lock file", ["uv.lock"], ALL),
    ("workflow", [".github/workflows/harness-conformance.yml"], ALL),
    ("shared orchestrator code", ["orchestrator/episode.py"], ALL),
    ("harness registry", ["orchestrator/harnesses/__init__.py", "orchestrator/harnesses/base.py"], ALL),
    ("unknown new top-level file", ["something_new.cfg"], ALL),
    ("one harness + shared", ["orchestrator/harnesses/hermes/native.py", "proxy_addons/sse.py"], ALL),
    (
        "a harness added after the first ten (cline)",
        [
            "orchestrator/harnesses/cline/timeline.py",
            "images/cline/package-lock.json",
            "tests/fixtures/native/cline/tool_failure/scenario.json",
            "tests/unit/harnesses/test_cline_normalize.py",
            "docs/results/cline.md",
        ],
        ["cline"],
    ),
    ("leading ./ and blank lines", ["./orchestrator/harnesses/codex/native.py", "", "  "], ["codex"]),
]


@pytest.mark.parametrize(("paths", "expected"), [(p, e) for _, p, e in TABLE], ids=[t[0] for t in TABLE])
def test_table(paths: list[str], expected: list[str]) -> None:
    sel = select(paths, ALL, parents=image_parents(REPO_ROOT))
    assert sel.harnesses == expected
    assert sel.all == (expected == ALL and bool(paths) and any("selects all" in r for r in sel.reasons.values()))


def test_reasons_name_each_path() -> None:
    sel = select(["README.md", "proxy_addons/chat.py", "tests/golden/pi/verdicts.json"], ALL)
    assert sel.reasons == {
        "README.md": "documentation: selects none",
        "proxy_addons/chat.py": "the scripted provider (proxy addon): selects all",
        "tests/golden/pi/verdicts.json": "harness files: pi",
    }


def test_image_folder_is_the_harness_name() -> None:
    # The CLI maps harness -> image folder by name without importing adapters; keep that true.
    for name in HARNESSES:
        if name not in IMAGE_FROM_OPTIONS:  # its image is a run's option; CI never selects it
            assert get_harness(name).image == name


def test_parent_chain_read_from_the_repo() -> None:
    parents = image_parents(REPO_ROOT)
    assert {h for h, p in parents.items() if p == "node"} == set(NPM)


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_base_ref_with_git(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q", "-b", "main")
    _git(tmp_path, "config", "user.email", "t@example.invalid")
    _git(tmp_path, "config", "user.name", "t")
    (tmp_path / "README.md").write_text("x\n")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "base")
    _git(tmp_path, "checkout", "-qb", "change")
    (tmp_path / "tests" / "golden" / "hermes").mkdir(parents=True)
    (tmp_path / "tests" / "golden" / "hermes" / "verdicts.json").write_text("{}\n")
    (tmp_path / "README.md").write_text("y\n")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "change")
    assert sorted(changed_paths("main", tmp_path)) == ["README.md", "tests/golden/hermes/verdicts.json"]
    res = hp("ci", "select", "--base", "main", "--repo", str(tmp_path))
    assert res.returncode == 0, res.stdout
    assert json.loads(res.stdout)["harnesses"] == ["hermes"]
    with pytest.raises(GitError, match="no-such-ref"):
        changed_paths("no-such-ref", tmp_path)
    res = hp("ci", "select", "--base", "no-such-ref", "--repo", str(tmp_path))
    assert res.returncode == 2


def test_cli_changed_file_matrix_and_github_output(tmp_path: Path) -> None:
    changed = tmp_path / "changed.txt"
    changed.write_text("orchestrator/harnesses/reference.py\ndocs/x.md\n")
    gh = tmp_path / "gh_output"
    extra = ["--extra-runtime", "podman", "--extra-runtime", "apptainer"]
    res = hp("ci", "select", "--changed-file", str(changed), *extra, "--github-output", str(gh))
    assert res.returncode == 0, res.stdout
    out = json.loads(res.stdout)
    validate(out, "ci-selection/v1")
    assert out["harnesses"] == ["reference"]
    assert out["matrix"]["include"] == [
        {"harness": "reference", "runtime": "docker"},
        {"harness": "reference", "runtime": "podman"},
        {"harness": "reference", "runtime": "apptainer"},
    ]
    lines = gh.read_text().splitlines()
    assert lines[0] == 'harnesses=["reference"]'
    assert json.loads(lines[1].partition("=")[2]) == out["matrix"]


def test_cli_docs_only_gives_an_empty_matrix(tmp_path: Path) -> None:
    changed = tmp_path / "changed.txt"
    changed.write_text("README.md\n")
    res = hp("ci", "select", "--changed-file", str(changed), "--extra-runtime", "podman")
    out = json.loads(res.stdout)
    assert (out["harnesses"], out["matrix"]["include"]) == ([], [])


def test_cli_all() -> None:
    res = hp("ci", "select", "--all")
    assert json.loads(res.stdout)["harnesses"] == ALL


def test_cli_refuses_a_runtime_it_does_not_know_and_a_repo_that_is_not_there() -> None:
    res = hp("ci", "select", "--all", "--extra-runtime", "nosuch")
    assert res.returncode == 2 and res.stdout == ""
    assert "'nosuch' is not one of 'docker', 'podman', 'apptainer'" in res.stderr
    res = hp("ci", "select", "--base", "HEAD", "--repo", "/nonexistent/repo")
    assert res.returncode == 2 and "--repo /nonexistent/repo: no such folder" in res.stderr


def test_cli_at_a_terminal_with_nothing_to_read_says_so_instead_of_waiting() -> None:
    # A pseudo-terminal on stdin, as a user typing the bare command has: before, it waited for input, silently.
    leader, follower = pty.openpty()
    try:
        res = subprocess.run([HP, "ci", "select"], stdin=follower, capture_output=True, text=True, timeout=60)
    finally:
        os.close(follower)
        os.close(leader)
    assert res.returncode == 2
    assert "nothing to select from: give --base REF, --changed-file FILE or --all" in res.stderr
