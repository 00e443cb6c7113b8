"""api_answers: a ping over a Unix socket that says yes only to a 200, and leaves no socket behind when it says no."""

from __future__ import annotations

import gc
import socket
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.runtime.ping import api_answers


def serve_once(path: Path, reply: bytes) -> threading.Thread:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)

    def answer() -> None:
        with server:
            conn, _ = server.accept()
            with conn:
                conn.recv(1024)
                conn.sendall(reply)

    t = threading.Thread(target=answer, daemon=True)
    t.start()
    return t


@pytest.fixture
def sock_path(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "api.sock"


def test_a_200_answer_is_yes(sock_path: Path) -> None:
    t = serve_once(sock_path, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK")
    assert api_answers(f"unix://{sock_path}") is True
    t.join(5)


@pytest.mark.parametrize("reply", [b"HTTP/1.1 500 Internal Server Error\r\n\r\n", b"", b"SSH-2.0-OpenSSH\r\n"])
def test_anything_else_is_no(sock_path: Path, reply: bytes) -> None:
    t = serve_once(sock_path, reply)
    assert api_answers(f"unix://{sock_path}") is False
    t.join(5)


def test_a_missing_socket_is_no_and_leaks_nothing(tmp_path: Path) -> None:
    # The SDK's transport leaked one socket per failed connect; a poll loop over a starting service showed it as
    # a ResourceWarning at some later garbage collection.
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for _ in range(20):
            assert api_answers(f"unix://{tmp_path / 'nothing.sock'}") is False
        gc.collect()
    assert [w for w in seen if issubclass(w.category, ResourceWarning)] == []


def test_a_socket_file_nobody_listens_on_is_no(tmp_path: Path) -> None:
    path = tmp_path / "dead.sock"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(path))
    s.close()
    assert api_answers(f"unix://{path}") is False
