"""An audit source's file hashes: sorted as paths sort, links named and never followed, changes found."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import pytest

from orchestrator import treehash
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


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    read: list[str] = []
    real = treehash._digest

    def digest(folder: int, name: str) -> tuple[str, os.stat_result | None]:
        read.append(name)
        return real(folder, name)

    monkeypatch.setattr(treehash, "_digest", digest)
    return read


def test_a_settled_file_is_compared_by_status_and_a_write_still_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(tmp_path)
    time.sleep(0.05)  # past the clock's tick: a write below gets a change time of its own
    hashes = TreeHashes(tmp_path, settled_before=time.time_ns() + 10**12)  # every file counts as settled
    read = _counting(monkeypatch)
    assert hashes.changed() == []
    assert read == []  # nothing read again
    (tmp_path / "a/b.txt").write_text("a/b.tx!")  # same size, new content: only the change time shows it
    (tmp_path / "a/z").chmod(0o600)  # status changed, content not: read again, not named
    assert hashes.changed() == ["a/b.txt"]
    assert sorted(read) == ["b.txt", "z"]
    assert dict(hashes.items())["a/b.txt"] == hashlib.sha256(b"a/b.txt").hexdigest()
    hashes.close()


def test_a_file_changed_just_before_the_walk_is_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _tree(tmp_path)
    hashes = TreeHashes(tmp_path)  # every file was written within SETTLED_NS: none has settled
    read = _counting(monkeypatch)
    assert hashes.changed() == []
    assert len(read) == 6
    hashes.close()
