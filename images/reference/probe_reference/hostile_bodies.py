"""Hostile modes against the witness and the proxy's memory: request bodies meant to fill the host's disk or the proxy.

`hostile-body-flood` sends 16 MiB request bodies (just within the proxy's body cap, so each is parsed and would be
recorded whole) to a route that takes them without a violation (Messages token counting), in a loop, before the
task: without a witness budget each one is 16 MiB more on the host's disk. `hostile-chunked-body` streams one 1.5 GiB
chunked body, never saying its length: a proxy that buffered it whole before its own cap would be killed for its
memory. Both then do the task honestly, so what the episode fails on is the flood alone.
"""

from __future__ import annotations

import http.client
import json
import os
import time
from urllib.parse import urlsplit

from probe_reference.progress import say

BODY_BYTES = 16 * 1024 * 1024  # the proxy's body cap (proxy_addons/limits.py): the largest body it parses
FLOOD_BODIES = 24  # 384 MiB sent: many times the witness budget (32 MiB)
CHUNKED_BYTES = 3 * 512 * 1024 * 1024  # 1.5 GiB
CHUNK = 1024 * 1024
COUNT_TOKENS = "/messages/count_tokens"


def _base() -> tuple[str, int, str]:
    url = os.environ.get("OPENAI_BASE_URL") or (os.environ.get("ANTHROPIC_BASE_URL", "") + "/v1")
    parts = urlsplit(url)
    return parts.hostname or "provider", parts.port or 80, parts.path.rstrip("/")


def _body(n: int) -> bytes:
    head = json.dumps({"model": "probe-model", "messages": [{"role": "user", "content": ""}]}).encode()
    # Padding in the message's text: valid JSON of exactly BODY_BYTES, different each time (no reply is reused).
    prefix, suffix = head[: head.rindex(b'""') + 1], head[head.rindex(b'""') + 1 :]
    marker = f"flood {n} ".encode()
    return prefix + marker + b"a" * (BODY_BYTES - len(prefix) - len(suffix) - len(marker)) + suffix


def body_flood() -> None:
    """hostile-body-flood: FLOOD_BODIES bodies of 16 MiB each, one after another, before the honest run."""
    host, port, path = _base()
    t0 = time.monotonic()
    statuses: dict[int, int] = {}
    for n in range(FLOOD_BODIES):
        conn = http.client.HTTPConnection(host, port, timeout=60)
        try:
            body = _body(n)
            conn.request("POST", path + COUNT_TOKENS, body=body, headers={"content-type": "application/json"})
            status = conn.getresponse().status
        except OSError as exc:
            say(f"hostile: body {n} not answered: {exc}")
            continue
        finally:
            conn.close()
        statuses[status] = statuses.get(status, 0) + 1
    seconds = round(time.monotonic() - t0, 1)
    say(f"hostile: sent {FLOOD_BODIES} bodies of {BODY_BYTES} bytes in {seconds} s: statuses {statuses}")


def chunked_body() -> None:
    """hostile-chunked-body: one chunked body of 1.5 GiB with no length, before the honest run."""
    host, port, path = _base()
    conn = http.client.HTTPConnection(host, port, timeout=60)
    chunk = b"a" * CHUNK
    frame = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
    sent = 0
    t0 = time.monotonic()
    try:
        conn.putrequest("POST", path + "/chat/completions")
        conn.putheader("content-type", "application/json")
        conn.putheader("transfer-encoding", "chunked")
        conn.endheaders()
        while sent < CHUNKED_BYTES:
            conn.send(frame)
            sent += len(chunk)
        conn.send(b"0\r\n\r\n")
        outcome = f"HTTP {conn.getresponse().status}"
    except OSError as exc:
        outcome = f"{type(exc).__name__}: {exc}"
    finally:
        conn.close()
    seconds = round(time.monotonic() - t0, 1)
    say(f"hostile: streamed {sent} of {CHUNKED_BYTES} chunked bytes in {seconds} s: {outcome}")
