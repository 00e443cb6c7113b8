"""An audit source's file hashes: sorted as paths sort, links named and never followed, changes found."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from orchestrator.treehash import TreeHashes, walk


def _tree(root: Path) -> None:
    for rel in ("a/b/x", "a/b.txt", "a/b-c", "a/z", "a0", "b"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)
    os.symlink(root / "b", root / "a/link")
    os.mkfifo(root / "a/fifo")


def test_the_walk_lists_every_file_sorted_as_paths_sort(tmp_path: Path) -> None:
    _tree(tmp_path)
    listed = list(walk(tmp_path))
    names = [rel for rel, _ in listed]
    assert names == sorted(names)
    digests = dict(listed)
    assert digests["a/b/x"] == hashlib.sha256(b"a/b/x").hexdigest()
    assert digests["a/link"] == "not-a-file:120000"
    assert digests["a/fifo"] == "not-a-file:10000"
    assert len(digests) == 8


def test_a_changed_added_or_removed_file_is_named(tmp_path: Path) -> None:
    _tree(tmp_path)
    hashes = TreeHashes(tmp_path)
    assert hashes.changed() == []
    (tmp_path / "a/b.txt").write_text("other")
    (tmp_path / "a/new").write_text("new")
    (tmp_path / "a/b/x").unlink()
    assert hashes.changed() == ["a/b.txt", "a/b/x", "a/new"]
    hashes.close()
