"""Hostile modes against the sandbox: the agent attacks its own pod, so tests can show the pod and its limits hold.

`hostile-network` tries to leave the pod (connects to host and outside addresses, the proxy's other
listeners without a token, a lookup of a cloud metadata name) and writes what happened to
`hostile.json` beside its rollout, then does its task honestly. It never sends anything but to
loopback: a connect elsewhere has no route and fails before a packet leaves. `hostile-cpu` burns
every CPU it can get and `hostile-fork` forks until the pids limit stops it; both never call the
model. `hostile-version` makes `--version` never end.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from probe_reference.progress import say

TARGETS_ENV = "PROBE_HOSTILE_TARGETS"
# Addresses a sandboxed process would try first: Docker's default gateway, cloud metadata, a public resolver.
DEFAULT_TARGETS = ("172.17.0.1", "169.254.169.254", "1.1.1.1")
PORTS = (22, 80, 2375)
REPORT_NAME = "hostile.json"
METADATA_NAME = "metadata.google.internal"
PROVIDER_PORTS = (53, 8080)


def _dial(host: str, port: int) -> dict[str, Any]:
    t0 = time.monotonic()
    try:
        socket.create_connection((host, port), timeout=3).close()
        result = "open"
    except OSError as exc:
        result = f"{type(exc).__name__}:{exc.errno}"
    return {"target": f"{host}:{port}", "result": result, "seconds": round(time.monotonic() - t0, 3)}


def _listening() -> list[int]:
    """Every TCP port listening in this network namespace (the proxy's: the pod shares one namespace)."""
    ports: set[int] = set()
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(name).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 3 and fields[3] == "0A":
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return sorted(ports)


def _foreign_request(port: int) -> str:
    """A request with a made-up plan token and a body; returns what came back (nothing, if the pod holds)."""
    try:
        conn = socket.create_connection(("127.0.0.1", port), timeout=5)
    except OSError as exc:
        return f"<{type(exc).__name__}>"
    with conn:
        conn.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nhost: provider\r\nx-probe-plan: " + b"0" * 32 + b"\r\n"
            b"content-length: 5\r\n\r\nhello"
        )
        conn.settimeout(15)
        data = b""
        try:
            while chunk := conn.recv(65536):
                data += chunk
        except OSError as exc:
            data += f"<{type(exc).__name__}>".encode()
    return data.decode("latin-1")


def escape_attempts(report_dir: Path) -> None:
    targets = [t for t in os.environ.get(TARGETS_ENV, "").split(",") if t] or list(DEFAULT_TARGETS)
    say(f"mode hostile-network: trying {len(targets)} address(es) outside the pod")
    try:
        looked_up = socket.gethostbyname(METADATA_NAME)
    except OSError as exc:
        looked_up = type(exc).__name__
    listening = _listening()
    connects = [_dial(host, port) for host in targets for port in PORTS]
    report = {
        "interfaces": sorted(os.listdir("/sys/class/net")),
        "connects": connects,
        "listening": listening,
        "foreign_requests": {str(p): _foreign_request(p) for p in listening if p not in PROVIDER_PORTS},
        "lookup": {METADATA_NAME: looked_up},
    }
    report_dir.mkdir(parents=True, exist_ok=True)
    (report_dir / REPORT_NAME).write_text(json.dumps(report, indent=2) + "\n")
    opened = [c["target"] for c in connects if c["result"] == "open"]
    say(f"mode hostile-network: {len(opened)} connect(s) outside the pod succeeded; now doing the task")


def burn_cpu() -> NoReturn:
    """Busy loops in one process per CPU the kernel shows (the quota, not the count, is what binds)."""
    say("mode hostile-cpu: burning every CPU until killed")
    for _ in range((os.cpu_count() or 1) * 2 - 1):
        if os.fork() == 0:
            break
    while True:
        pass


def fork_bomb() -> NoReturn:
    """Fork without end; only the pids limit stops it."""
    say("mode hostile-fork: forking until something stops it")
    while True:
        try:
            os.fork()
        except OSError:
            time.sleep(0.01)


def version_forever(argv: Sequence[str]) -> None:
    """`--version` with `--mode hostile-version` never ends (the orchestrator's version probe must give up)."""
    args = list(argv)
    if "--version" in args and "hostile-version" in args:
        say("mode hostile-version: --version will never finish")
        while True:
            time.sleep(3600)
