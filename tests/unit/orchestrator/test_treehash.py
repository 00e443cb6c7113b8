"""An audit source's file hashes: sorted as paths sort, links named and never followed, changes found."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path
from typing import Any

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

    def digest(folder: int, name: str, budget: Any = None) -> tuple[str, os.stat_result | None]:
        read.append(name)
        return real(folder, name, budget)

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


def _deny_open(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    # What a mode-000 file or folder gives a user without DAC capabilities; injected, since root reads everything.
    real = os.open

    def denied(path: str, flags: int, *args: object, **kwargs: object) -> int:
        if path in names:
            raise PermissionError(13, "Permission denied", path)
        return real(path, flags, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", denied)


def test_a_file_or_folder_that_cannot_be_read_is_named_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(tmp_path)
    _deny_open(monkeypatch, "b.txt", "b")  # the file a/b.txt, the folder a/b/ and the file b
    digests = dict(walk(tmp_path))
    assert digests["a/b.txt"] == digests["b"] == "unreadable:Permission denied"
    assert digests["a/b/"] == "unreadable:Permission denied"  # named as a folder, its files not listed
    assert "a/b/x" not in digests
    assert digests["a/z"] == hashlib.sha256(b"a/z").hexdigest()  # the rest is read as ever
    hashes = TreeHashes(tmp_path)
    try:
        assert hashes.changed() == []  # unreadable both times: unchanged, as an unchanged link is
        monkeypatch.undo()
        assert hashes.changed() == ["a/b.txt", "a/b/", "a/b/x", "b"]  # readable now: a change
    finally:
        hashes.close()


def test_past_the_read_budget_files_are_named_by_size_and_never_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("a", "b", "c"):
        (tmp_path / name).write_bytes(name.encode() * 10)
    read_bytes: list[int] = []
    real_read = os.read
    monkeypatch.setattr(treehash.os, "read", lambda fd, n: read_bytes.append(n) or real_read(fd, n))
    hashes = TreeHashes(tmp_path, settled_before=0, read_budget=15)  # one file of 10 bytes, not two
    digests = dict(hashes.items())
    assert digests["a"] == hashlib.sha256(b"a" * 10).hexdigest()
    st = os.stat(tmp_path / "b")
    assert digests["b"] == f"size:10:mtime:{st.st_mtime_ns}" and digests["c"].startswith("size:10:")
    assert len(read_bytes) == 1  # "a" alone was read
    # Compared again as they were named, without reading them: unchanged, then a write found.
    assert hashes.changed() == []
    (tmp_path / "c").write_bytes(b"c" * 11)
    assert hashes.changed() == ["c"]
    assert len(read_bytes) == 3  # "a" again in each walk (it is not settled), never "b" or "c"
    hashes.close()


def test_a_sparse_file_past_the_budget_costs_no_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A harness can leave files of 255 MiB that take no disk: an audit hashes at most its budget of them.
    for i in range(4):
        with (tmp_path / f"sparse{i}").open("wb") as f:
            f.truncate(255 << 20)
    read = [0]
    real_read = os.read

    def counting(fd: int, n: int) -> bytes:
        chunk = real_read(fd, n)
        read[0] += len(chunk)
        return chunk

    monkeypatch.setattr(treehash.os, "read", counting)
    TreeHashes(tmp_path, read_budget=300 << 20).close()
    assert read[0] == 255 << 20  # the first alone
