"""Hostile modes against the readers after collection: text that is not Unicode, ATIF files that ask for unbounded
work or break the strict reader's rules, and a folder tree deeper than any reader should walk.

Each plays the task honestly on the wire and then leaves its evidence in native/; the orchestrator must answer with
a `fail` and a named finding (in the run, or in `audit --rollout-format atif` of the saved run), never an `error`,
a crash after the verdicts, or unbounded memory.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from pathlib import Path

from probe_reference.progress import say

DEEP_TREE_LEVELS = 1100  # past the orchestrator's depth cap (64) and the usual 1,024-descriptor limit
HUGE_CALL_COUNT = 10**15
# Non-UTF-8 names: read with surrogateescape they become lone surrogates in every text that quotes them.
BAD_NAMES = (b"\xff\xfe-log.txt", b"bad-\xed\xa0\x80-link")


def _trajectory(call_count: int | None = None) -> dict[str, object]:
    step: dict[str, object] = {"step_id": 2, "source": "agent", "message": "done", "model_name": "probe-model"}
    if call_count is not None:
        step["llm_call_count"] = call_count
    return {
        "schema_version": "ATIF-v1.7",
        "session_id": "hostile",
        "agent": {"name": "reference", "version": "0", "model_name": "probe-model"},
        "steps": [{"step_id": 1, "source": "user", "message": "the task"}, step],
    }


def surrogate(rollout_path: Path) -> None:
    """hostile-surrogate: a lone surrogate (the JSON escape \\ud800) in the rollout's final answer, and native files
    whose names are not UTF-8 (one a link, so the collection names it)."""
    text = rollout_path.read_text()
    rollout = json.loads(text)
    answer = rollout.get("outcome", {}).get("final_answer") or ""
    rollout["outcome"]["final_answer"] = answer + "\ud800"
    # json.dumps writes the lone surrogate as its escape: valid JSON text, not Unicode text.
    rollout_path.write_text(json.dumps(rollout, indent=2))
    folder = os.fsencode(rollout_path.parent)
    with open(os.path.join(folder, BAD_NAMES[0]), "wb") as f:
        f.write(b"a log whose name is not UTF-8\n")
    with contextlib.suppress(FileExistsError):
        os.symlink(b"/etc/passwd", os.path.join(folder, BAD_NAMES[1]))
    say(f"hostile: final answer ends in a lone surrogate; planted {len(BAD_NAMES)} non-UTF-8 names")


def atif_calls(rollout_path: Path) -> None:
    """hostile-atif-calls: a 1 KiB trajectory.json whose one agent step stands for 10^15 LLM calls."""
    folder = rollout_path.parent / "atif"
    folder.mkdir(exist_ok=True)
    (folder / "trajectory.json").write_text(json.dumps(_trajectory(HUGE_CALL_COUNT), indent=2))
    say(f"hostile: planted {folder}/trajectory.json (llm_call_count {HUGE_CALL_COUNT})")


def atif_strict(rollout_path: Path) -> None:
    """hostile-atif-strict: a trajectory.json with a duplicate key (the second `steps` empty) and a 60-digit
    integer, and, first in path order, a trajectory.json that is a link to a host file."""
    folder = rollout_path.parent / "atif"
    folder.mkdir(exist_ok=True)
    doc = json.dumps(_trajectory(), indent=2)
    # The duplicate comes last: a reader that keeps the last of two keys sees no steps at all.
    doc = doc[: doc.rindex("}")] + ', "steps": [], "extra": {"n": ' + "9" * 60 + "}}\n"
    (folder / "trajectory.json").write_text(doc)
    first = rollout_path.parent / "aaa"
    first.mkdir(exist_ok=True)
    with contextlib.suppress(FileExistsError):
        (first / "trajectory.json").symlink_to("/etc/passwd")
    say(f"hostile: planted {folder}/trajectory.json (duplicate key, 60-digit integer) and a linked one")


def deep_tree(rollout_path: Path) -> None:
    """hostile-deep-tree: the rollout moved to the bottom of a folder tree 1,100 levels deep."""
    top = os.open(rollout_path.parent, os.O_RDONLY | os.O_DIRECTORY)
    fd = top
    try:
        for _ in range(DEEP_TREE_LEVELS):
            with contextlib.suppress(FileExistsError):
                os.mkdir("d", dir_fd=fd)
            nxt = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            if fd != top:
                os.close(fd)
            fd = nxt
        # Moved, not copied: only a reader that walks all 1,100 levels finds the self-report.
        os.rename(rollout_path.name, "rollout.json", src_dir_fd=top, dst_dir_fd=fd)
    finally:
        if fd != top:
            os.close(fd)
        os.close(top)
    say(f"hostile: moved the rollout {DEEP_TREE_LEVELS} folders deep")


# (name, summary, what to do after the rollout is written): modes.py makes a Mode of each.
AFTER_WRITE: tuple[tuple[str, str, Callable[[Path], None]], ...] = (
    ("hostile-surrogate", "a lone surrogate in the rollout, non-UTF-8 file names in native/", surrogate),
    ("hostile-atif-calls", "a trajectory.json whose one step stands for 10^15 LLM calls", atif_calls),
    ("hostile-atif-strict", "a trajectory.json with a duplicate key and a huge integer; a linked one", atif_strict),
    ("hostile-deep-tree", "the rollout moved 1,100 folders deep", deep_tree),
)
