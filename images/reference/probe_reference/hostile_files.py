"""Hostile modes against collection: the reference agent attacks how the orchestrator collects and proxies.

Each plays the task honestly on the wire (unless said otherwise) and then leaves something that a careless
orchestrator would follow, block on or read whole. The orchestrator must answer each with a `fail` and a
named finding: never an `error`, a hang, or a read outside the episode.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import urllib.error
import urllib.request
from pathlib import Path

from probe_reference.progress import say
from probe_reference.tools import ToolResult, execute

MARKER_REDIRECT = re.compile(r"> (/probe/markers/\S+)")
SPARSE_BYTES = 100 << 30
DEEP_BODY_LEVELS = 3000


def _plant(path: Path, what: str) -> None:
    """Make `path` a link, FIFO or device (replacing what is there); failures are said, not fatal."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    try:
        if what == "fifo":
            os.mkfifo(path)
        elif what == "device":
            os.mknod(path, 0o600 | 0o020000, os.makedev(1, 5))  # /dev/zero's numbers; needs CAP_MKNOD
        else:
            path.symlink_to(what)
        say(f"hostile: planted {path} ({what})")
    except OSError as exc:
        say(f"hostile: could not plant {path} ({what}): {exc}")


def plant_files(rollout_path: Path) -> None:
    """hostile-files: links to host files, `..` loops, a FIFO and a device, in the native folder and markers.

    The rollout itself becomes a link to a host file, so an orchestrator that follows links would read
    /etc/passwd as the self-report; one that does not has no rollout (a fail) and names the link.
    """
    folder = rollout_path.parent
    real = folder / "rollout.real.json"
    with contextlib.suppress(FileNotFoundError):
        os.replace(rollout_path, real)
    _plant(rollout_path, "/etc/passwd")
    for name, what in [
        ("shadow", "/etc/shadow"),
        ("passwd-rel", "../../../../../../etc/passwd"),
        ("up", ".."),
        ("root", "/"),
        ("self", "self"),
        ("pipe", "fifo"),
        ("zero", "device"),
    ]:
        _plant(folder / name, what)
    markers = Path("/probe/markers")
    if markers.is_dir():
        for name, what in [("up", ".."), ("leak.txt", "/etc/passwd"), ("pipe.txt", "fifo"), ("zero.txt", "device")]:
            _plant(markers / name, what)


def plant_sparse(rollout_path: Path) -> None:
    """hostile-sparse: a 100 GiB sparse file (costs nothing) named to come before the rollout in the archive."""
    big = rollout_path.parent / "aaa-sparse.bin"
    with big.open("wb") as f:
        f.truncate(SPARSE_BYTES)
    say(f"hostile: planted {big} ({SPARSE_BYTES} bytes, sparse)")


_marker_calls = 0


def marker_tool(tool_name: str, raw_arguments: str) -> ToolResult:
    """hostile-marker: the marker path becomes a FIFO (first call) or a link to /dev/zero (later calls).

    The command runs with its marker write sent to /dev/null, so its printed output looks honest; only the
    marker, which the proxy reads, is hostile.
    """
    global _marker_calls
    try:
        args = json.loads(raw_arguments)
    except ValueError:
        return execute(tool_name, raw_arguments)
    command = args.get("command") if isinstance(args, dict) else None
    match = MARKER_REDIRECT.search(command) if isinstance(command, str) else None
    if match is None or not isinstance(command, str):
        return execute(tool_name, raw_arguments)
    marker = Path(match.group(1).strip("'\""))
    marker.parent.mkdir(parents=True, exist_ok=True)
    _plant(marker, "fifo" if _marker_calls == 0 else "/dev/zero")
    _marker_calls += 1
    tame = command[: match.start()] + "> /dev/null" + command[match.end() :]
    return execute(tool_name, json.dumps({**args, "command": tame}))


def deep_body() -> None:
    """hostile-deep-body: one request whose JSON nests 3000 levels, before the honest run."""
    base = os.environ.get("OPENAI_BASE_URL") or (os.environ.get("ANTHROPIC_BASE_URL", "") + "/v1")
    body = b'{"model": "probe-model", "messages": ' + b"[" * DEEP_BODY_LEVELS + b"]" * DEEP_BODY_LEVELS + b"}"
    request = urllib.request.Request(
        base.rstrip("/") + "/chat/completions",
        data=body,
        headers={"content-type": "application/json", "authorization": "Bearer x"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status = response.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except OSError as exc:
        say(f"hostile: deep body not answered: {exc}")
        return
    say(f"hostile: sent a {DEEP_BODY_LEVELS}-deep body ({len(body)} bytes): HTTP {status}")
