"""What a harness can make the proxy read: marker files and request bodies, each bounded before it is touched."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence
from itertools import accumulate

__all__ = [
    "MARKER_MAX_BYTES",
    "MAX_BODIES_IN_FLIGHT",
    "MAX_BODY_BYTES",
    "MAX_HEAD_BYTES",
    "MAX_JSON_DEPTH",
    "PATH_SHOWN",
    "body_over_cap",
    "check_marker",
    "declared_body",
    "head_over_cap",
]

MARKER_MAX_BYTES = 4096  # a marker holds one token of a few dozen bytes
MAX_BODY_BYTES = 16 * 1024 * 1024  # long agent histories are a few MiB; this is far beyond any real one
MAX_JSON_DEPTH = 100  # real request bodies nest tool schemas a few dozen levels; the witness adds two
# A request's head: its method, path and headers, which every attempt line records (the allow-listed headers) and
# which no witness budget bounds. Real ones are a few hundred bytes; a 64 MiB path would be written three times.
MAX_HEAD_BYTES = 64 * 1024
PATH_SHOWN = 1024  # the characters of a refused head's path the witness keeps
# Request bodies arriving at once, by their declared length (one without a length counts as a whole body's cap):
# mitmproxy holds each whole before the addon sees it, so 64 connections of 16 MiB each would take a GiB, past the
# proxy's memory limit. Real harnesses send one request at a time, or a few small ones.
MAX_BODIES_IN_FLIGHT = 4 * MAX_BODY_BYTES
_OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_NOT_BRACKETS = bytes(range(256)).translate(None, b"[]{}")
_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_STRING = re.compile(rb'"[^"]*"')
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


def check_marker(path: str, token: str) -> tuple[bool, bool]:
    """(present, content equals token) for a marker file, read so that no file the harness plants can block us.

    The harness knows the path: a FIFO there would block a plain open, a link to /dev/zero would never end,
    and a huge file would fill memory. Only a regular file, opened without following links, is read, and only
    up to a cap.
    """
    try:
        fd = os.open(path, _OPEN)
    except FileNotFoundError:
        return (False, False)
    except OSError:
        # A link (ELOOP with O_NOFOLLOW) or otherwise unopenable: present, but it proves nothing.
        return (os.path.lexists(path), False)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return (True, False)
        content = os.read(fd, MARKER_MAX_BYTES + 1)  # a regular file: never blocks, even with O_NONBLOCK
    except OSError:
        return (True, False)
    finally:
        os.close(fd)
    return (True, len(content) <= MARKER_MAX_BYTES and content == token.encode("utf-8"))


def body_over_cap(body: bytes) -> str | None:
    """Why a request body is not recorded or parsed (too large, too deeply nested JSON), or None."""
    if len(body) > MAX_BODY_BYTES:
        return f"request body of {len(body)} bytes is over the {MAX_BODY_BYTES}-byte cap"
    depth = _max_depth(body)
    if depth > MAX_JSON_DEPTH:
        return f"request body nests JSON {depth} levels deep, over the cap of {MAX_JSON_DEPTH}"
    return None


def head_over_cap(method: str, path: str, headers: Sequence[tuple[bytes, bytes]]) -> tuple[str, int] | None:
    """(why, its size in bytes) when a request's head is past MAX_HEAD_BYTES, or None."""
    size = len(method) + len(path) + sum(len(name) + len(value) + 4 for name, value in headers)
    if size <= MAX_HEAD_BYTES:
        return None
    return (
        f"request head (method, path of {len(path)} characters and {len(headers)} headers) of {size} bytes is over "
        f"the {MAX_HEAD_BYTES}-byte cap",
        size,
    )


def _max_depth(body: bytes) -> int:
    # Brackets inside strings do not nest. Escapes first (a `\"` does not end a string), then strings, then
    # everything but brackets, all in C; the depth is the highest running sum of +1/-1.
    skeleton = _STRING.sub(b"", _ESCAPE.sub(b"", body)).translate(None, _NOT_BRACKETS)
    return max(accumulate(_STEP[c] for c in skeleton), default=0)


def declared_body(content_length: str | None, chunked: bool, framed: bool = False) -> int:
    """What a request's body may take while it arrives: its declared length, at most the body cap (past it
    mitmproxy refuses it anyway); the whole cap for a chunked body, whose length no one knows in advance, and for a
    body in frames (HTTP/2, `framed`) that declares none. An HTTP/1 request with neither has no body."""
    if chunked:
        return MAX_BODY_BYTES
    declared = (content_length or "").strip()
    if not (declared.isascii() and declared.isdigit()):
        return MAX_BODY_BYTES if declared or framed else 0
    return min(int(declared[:18]) if len(declared) <= 18 else MAX_BODY_BYTES, MAX_BODY_BYTES)
