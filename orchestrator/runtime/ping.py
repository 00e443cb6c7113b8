"""Whether a Docker-compatible API answers at an address, asked without leaving a socket open."""

from __future__ import annotations

import socket

__all__ = ["api_answers"]

UNIX_SCHEMES = ("unix://", "http+unix://")


def _unix_ping(path: str, timeout: float) -> bool:
    # The SDK's own Unix transport does not close its socket when connect() fails (a socket file that is not
    # there yet, or one nobody listens on); polling a starting service through it leaks one per try.
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(path)
            sock.sendall(b"GET /_ping HTTP/1.0\r\nHost: localhost\r\n\r\n")
            head = sock.recv(64)
    except OSError:
        return False
    status = head.split(b"\r\n", 1)[0].split()
    return len(status) >= 2 and status[0].startswith(b"HTTP/1.") and status[1] == b"200"


def api_answers(url: str, timeout: float = 5.0) -> bool:
    """Whether `url` (unix://, tcp://, ssh://) answers a ping; never raises."""
    if url.startswith(UNIX_SCHEMES):
        return _unix_ping(url.split("://", 1)[1], timeout)
    import docker  # only for tcp:// and ssh://, so `doctor` stays fast without it

    try:
        # Making the client already asks the engine its API version: that too fails while nothing listens.
        client = docker.DockerClient(base_url=url, timeout=int(max(1, timeout)))
    except Exception:
        return False
    try:
        client.ping()
    except Exception:
        return False
    finally:
        client.close()
    return True
