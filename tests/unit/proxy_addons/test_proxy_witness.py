"""Witness recorder on its own: header filtering, seq continuity, group-committed fsync, durable-write failures."""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from proxy_addons.witness import WitnessRecorder, WitnessWriteError, utc_timestamp, witness_headers


def test_headers_are_allow_listed_and_secrets_hashed() -> None:
    headers = witness_headers(
        [
            (b"User-Agent", b"OpenAI/Python 2.14.0"),
            (b"X-Stainless-Lang", b"python"),
            (b"OpenAI-Organization", b"org"),
            (b"x-codex-turn-metadata", b"t"),
            (b"Session-Id", b"s1"),
            (b"Authorization", b"Bearer sk-1"),
            (b"x-api-key", b"k"),
            (b"api-key", b"k2"),
            (b"openai-api-key", b"k3"),
            (b"cookie", b"c=1"),
            (b"x-forwarded-for", b"10.0.0.1"),
            (b"accept", b"text/event-stream"),
            (b"accept", b"application/json"),
        ]
    )

    def digest(value: bytes) -> str:
        return "sha256:" + hashlib.sha256(value).hexdigest()

    assert headers == {
        "user-agent": "OpenAI/Python 2.14.0",
        "x-stainless-lang": "python",
        "openai-organization": "org",
        "x-codex-turn-metadata": "t",
        "session-id": "s1",
        "authorization": digest(b"Bearer sk-1"),
        "x-api-key": digest(b"k"),
        "api-key": digest(b"k2"),
        "openai-api-key": digest(b"k3"),
        "accept": "text/event-stream, application/json",
    }


def test_timestamps_are_utc_with_z() -> None:
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z", utc_timestamp())


@pytest.mark.parametrize(
    ("when", "expected"),
    [
        (datetime(2026, 3, 1, 0, 30, tzinfo=timezone(timedelta(hours=2))), "2026-02-28T22:30:00.000000Z"),
        (datetime(2026, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), "2026-12-31T23:59:59.999999Z"),
    ],
)
def test_utc_timestamp_is_utc_with_six_fraction_digits_and_z(when: datetime, expected: str) -> None:
    assert utc_timestamp(when) == expected


def test_seq_continues_after_existing_lines_and_a_torn_line_is_terminated(tmp_path: Path) -> None:
    path = tmp_path / "witness.jsonl"
    path.write_bytes(b'{"seq":0}\n{"seq":1}\n{"torn')
    recorder = WitnessRecorder(path, clock=lambda: "2026-01-01T00:00:00.000000Z")
    record = recorder.write("end", {"attempts": 0, "finished": False})
    recorder.close()
    lines = path.read_bytes().split(b"\n")
    assert record["seq"] == 3 and json.loads(lines[3]) == record
    assert lines[2] == b'{"torn' and lines[-1] == b""


def test_fsync_failure_poisons_the_recorder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = WitnessRecorder(tmp_path / "w.jsonl")
    recorder.write("end", {"attempts": 0, "finished": False})
    recorder.sync()

    def failing_fsync(fd: int) -> None:
        raise OSError(5, "I/O error")

    with monkeypatch.context() as patch:
        patch.setattr("proxy_addons.witness.os.fsync", failing_fsync)
        # Written and flushed (a proxy crash would not lose it); its fsync fails behind the reply.
        recorder.write("end", {"attempts": 0, "finished": False})
        assert len((tmp_path / "w.jsonl").read_bytes().splitlines()) == 2
        with pytest.raises(WitnessWriteError, match="I/O error"):
            recorder.sync()
    assert recorder.broken
    with pytest.raises(WitnessWriteError):
        recorder.write("end", {"attempts": 0, "finished": False})
    recorder.close()  # the failure was already raised to a caller


def test_an_fsync_failure_nobody_saw_fails_close(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = WitnessRecorder(tmp_path / "w.jsonl")

    def failing_fsync(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("proxy_addons.witness.os.fsync", failing_fsync)
    recorder.write("end", {"attempts": 0, "finished": False})
    with pytest.raises(WitnessWriteError, match="No space left"):
        recorder.close()
    assert recorder.broken


def test_a_failing_write_raises_at_once(tmp_path: Path) -> None:
    recorder = WitnessRecorder("/dev/full")
    with pytest.raises(WitnessWriteError, match="cannot write"):
        recorder.write("end", {"attempts": 0, "finished": False})
    assert recorder.broken
    recorder.close()


def test_every_line_is_fsyncd_by_close_without_blocking_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "w.jsonl"
    release = threading.Event()
    synced_sizes: list[int] = []
    real_fsync = os.fsync

    def slow_fsync(fd: int) -> None:
        release.wait(10)
        synced_sizes.append(os.fstat(fd).st_size)
        real_fsync(fd)

    monkeypatch.setattr("proxy_addons.witness.os.fsync", slow_fsync)
    recorder = WitnessRecorder(path, lag_bound=60)
    for _ in range(5):
        recorder.write("end", {"attempts": 0, "finished": False})  # returns while the fsync is held
    assert not synced_sizes
    release.set()
    recorder.close()
    # Group commit: fewer fsyncs than lines, and the last one covered the whole file.
    assert 1 <= len(synced_sizes) < 5
    assert synced_sizes[-1] == path.stat().st_size and len(path.read_bytes().splitlines()) == 5


def test_a_write_waits_for_a_line_older_than_the_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    real_fsync = os.fsync

    def held_fsync(fd: int) -> None:
        release.wait(10)
        real_fsync(fd)

    monkeypatch.setattr("proxy_addons.witness.os.fsync", held_fsync)
    recorder = WitnessRecorder(tmp_path / "w.jsonl", lag_bound=0.001)
    recorder.write("end", {"attempts": 0, "finished": False})
    time.sleep(0.01)
    second = threading.Thread(target=recorder.write, args=("end", {"attempts": 0, "finished": False}))
    second.start()
    second.join(0.2)
    assert second.is_alive()  # the first line is older than the bound and not fsync'd yet
    release.set()
    second.join(10)
    assert not second.is_alive()
    recorder.close()


def test_unopenable_witness_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(WitnessWriteError):
        WitnessRecorder(tmp_path / "missing-dir" / "w.jsonl")


def test_the_writer_gathers_a_group_for_the_commit_delay_unless_someone_waits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced_sizes: list[int] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        synced_sizes.append(os.fstat(fd).st_size)
        real_fsync(fd)

    monkeypatch.setattr("proxy_addons.witness.os.fsync", counting_fsync)
    path = tmp_path / "w.jsonl"
    recorder = WitnessRecorder(path, lag_bound=60, commit_delay=0.3)
    for _ in range(3):
        recorder.write("end", {"attempts": 0, "finished": False})
    time.sleep(0.05)
    assert synced_sizes == []  # still gathering the group
    deadline = time.monotonic() + 10
    while not synced_sizes and time.monotonic() < deadline:
        time.sleep(0.01)
    # Nobody waited: one fsync after the delay covered all three lines.
    assert synced_sizes == [path.stat().st_size]
    recorder.close()

    # A waiter (here `sync`; also the lag bound and `close`) does not sit out the delay.
    recorder = WitnessRecorder(path, lag_bound=600, commit_delay=300)
    recorder.write("end", {"attempts": 0, "finished": False})
    started = time.monotonic()
    recorder.sync()
    assert time.monotonic() - started < 5 and synced_sizes[-1] == path.stat().st_size
    recorder.write("end", {"attempts": 0, "finished": False})
    started = time.monotonic()
    recorder.close()
    assert time.monotonic() - started < 5 and synced_sizes[-1] == path.stat().st_size
    assert len(synced_sizes) == 3
