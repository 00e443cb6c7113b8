"""What the interpreter exchanges with the addon: the request and reply types, and their JSON bodies."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from proxy_addons import sse
from proxy_addons.wire import ResetResponse, TimedResponse

JSON_HEADERS = {"content-type": "application/json"}
SSE_HEADERS = {"content-type": sse.CONTENT_TYPE, "cache-control": "no-cache"}


@dataclass(frozen=True)
class IncomingRequest:
    """A provider request as the addon received it, free of mitmproxy types."""

    method: str
    path: str
    headers: tuple[tuple[bytes, bytes], ...]
    # Body with any content-encoding removed (what we parse).
    body: bytes
    # Body as on the wire, for the witness hash; None means identical to `body`.
    raw_body: bytes | None = None


@dataclass(frozen=True)
class OutgoingResponse:
    """A reply to hand to the client at once, in one piece."""

    status: int
    headers: Mapping[str, str]
    body: bytes


# What the interpreter answers: a reply now, a timed reply for the streaming responder, or no reply.
Answer = OutgoingResponse | TimedResponse | ResetResponse


class _NotJson(ValueError):
    pass


def _no_constants(name: str) -> Any:
    # NaN/Infinity are not JSON; accepting them would also make the witness line unserialisable.
    raise _NotJson(f"not JSON: {name}")


def parse_json_body(body: bytes) -> Any:
    """The body parsed as strict JSON; raises ValueError when it is empty or not JSON."""
    if not body.strip():
        raise _NotJson("empty body")
    return json.loads(body, parse_constant=_no_constants)


def json_bytes(body: Mapping[str, Any]) -> bytes:
    return json.dumps(body, separators=(",", ":"), allow_nan=False).encode("utf-8")
