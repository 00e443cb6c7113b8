"""Marker files and request bodies a hostile harness controls: nothing it plants may block or sink the proxy."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from conftest import BASH_TOOL, MakeProvider, chat_body

from proxy_addons.limits import MARKER_MAX_BYTES, MAX_JSON_DEPTH, body_over_cap, check_marker

TOKEN = "probe_abc123"


def _timed(fn: object, *args: object) -> tuple[object, float]:
    t0 = time.monotonic()
    out = fn(*args)  # type: ignore[operator]
    return out, time.monotonic() - t0


def test_regular_marker_is_read(tmp_path: Path) -> None:
    (tmp_path / "m").write_text(TOKEN)
    (tmp_path / "w").write_text("other")
    assert check_marker(str(tmp_path / "m"), TOKEN) == (True, True)
    assert check_marker(str(tmp_path / "w"), TOKEN) == (True, False)
    assert check_marker(str(tmp_path / "absent"), TOKEN) == (False, False)


def test_fifo_marker_does_not_block(tmp_path: Path) -> None:
    fifo = tmp_path / "m"
    os.mkfifo(fifo)
    # No writer at all: a plain open() would block for ever.
    result, seconds = _timed(check_marker, str(fifo), TOKEN)
    assert result == (True, False) and seconds < 1


def test_fifo_marker_with_a_writer_that_never_writes(tmp_path: Path) -> None:
    fifo = tmp_path / "m"
    os.mkfifo(fifo)
    rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    wfd = os.open(fifo, os.O_WRONLY)  # a writer holds it open and sends nothing: a read would block
    try:
        result, seconds = _timed(check_marker, str(fifo), TOKEN)
    finally:
        os.close(wfd)
        os.close(rfd)
    assert result == (True, False) and seconds < 1


def test_link_to_dev_zero_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "m").symlink_to("/dev/zero")
    (tmp_path / "good").write_text(TOKEN)
    (tmp_path / "l").symlink_to(tmp_path / "good")  # even a link to the right content proves nothing
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    result, seconds = _timed(check_marker, str(tmp_path / "m"), TOKEN)
    assert result == (True, False) and seconds < 1
    assert check_marker(str(tmp_path / "l"), TOKEN) == (True, False)
    assert check_marker(str(tmp_path / "dangling"), TOKEN) == (True, False)


def test_device_and_folder_markers_are_refused(tmp_path: Path) -> None:
    assert check_marker("/dev/null", TOKEN) == (True, False)
    (tmp_path / "d").mkdir()
    assert check_marker(str(tmp_path / "d"), TOKEN) == (True, False)


def test_huge_marker_is_read_only_up_to_the_cap(tmp_path: Path) -> None:
    big = tmp_path / "m"
    with big.open("wb") as f:
        f.write(TOKEN.encode())
        f.truncate(100 << 30)  # sparse: 100 GiB apparent size
    result, seconds = _timed(check_marker, str(big), TOKEN)
    assert result == (True, False) and seconds < 1
    exact = tmp_path / "e"
    exact.write_bytes(b"x" * (MARKER_MAX_BYTES + 1))
    assert check_marker(str(exact), "x" * (MARKER_MAX_BYTES + 1)) == (True, False)


def test_body_caps() -> None:
    assert body_over_cap(json.dumps(chat_body([{"role": "user", "content": "[[[{{{" * 1000}])).encode()) is None
    deep = b"[" * 3000 + b"]" * 3000
    assert "3000 levels" in (body_over_cap(deep) or "")
    assert body_over_cap(b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH) is None
    escaped = json.dumps({"a": "\\" * 5 + '"[[[' * 500}).encode()
    assert body_over_cap(escaped) is None
    assert "bytes is over" in (body_over_cap(b" " * (16 * 1024 * 1024 + 1)) or "")


def test_deep_body_is_a_violation_with_size_and_hash(make_provider: MakeProvider) -> None:
    provider = make_provider()
    nested: object = "x"
    for _ in range(3000):
        nested = [nested]
    body = b'{"model":"m","messages":[{"role":"user","content":' + json.dumps(nested).encode() + b"}]}"
    flow = provider.chat(body)
    assert flow.response is not None and flow.response.status_code == 413
    (violation,) = provider.events("violation")
    assert violation["code"] == "body_over_cap" and violation["size"] == len(body)
    assert len(violation["sha256"]) == 64
    (attempt,) = provider.events("attempt")
    assert attempt["request"] is None and attempt["kind"] == "rejected"
    # The proxy still answers the next, honest request.
    ok = provider.chat(chat_body([{"role": "user", "content": "hi"}], tools=[BASH_TOOL]))
    assert ok.response is not None and ok.response.status_code == 200
