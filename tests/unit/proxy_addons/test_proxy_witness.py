"""Witness recorder on its own: header filtering, seq continuity, durable-write failures."""

from __future__ import annotations

import hashlib
import json
import re
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


def test_seq_continues_after_existing_lines_and_a_torn_line_is_terminated(tmp_path: Path) -> None:
    path = tmp_path / "witness.jsonl"
    path.write_bytes(b'{"seq":0}\n{"seq":1}\n{"torn')
    recorder = WitnessRecorder(path, clock=lambda: "2026-01-01T00:00:00.000000Z")
    record = recorder.write("end", {"attempts": 0, "finished": False})
    recorder.close()
    lines = path.read_bytes().split(b"\n")
    assert record["seq"] == 3 and json.loads(lines[3]) == record
    assert lines[2] == b'{"torn' and lines[-1] == b""


def test_write_failure_poisons_the_recorder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = WitnessRecorder(tmp_path / "w.jsonl")
    recorder.write("end", {"attempts": 0, "finished": False})

    def failing_fsync(fd: int) -> None:
        raise OSError(5, "I/O error")

    monkeypatch.setattr("proxy_addons.witness.os.fsync", failing_fsync)
    with pytest.raises(WitnessWriteError):
        recorder.write("end", {"attempts": 0, "finished": False})
    monkeypatch.undo()
    assert recorder.broken
    with pytest.raises(WitnessWriteError):
        recorder.write("end", {"attempts": 0, "finished": False})
    recorder.close()


def test_unopenable_witness_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(WitnessWriteError):
        WitnessRecorder(tmp_path / "missing-dir" / "w.jsonl")
