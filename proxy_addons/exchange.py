"""What the interpreter exchanges with the addon: the request and reply types, and their JSON bodies."""

from __future__ import annotations

import codecs
import json
import math
import re
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
    # Its content-encoding inflates it past the body cap: `body` is then empty, and the request is refused.
    inflates_past_cap: bool = False


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


# The longest integer a body may hold: what the witness reader takes (orchestrator/evidence/jsonread.py, which this
# package may not import; a unit test holds the two equal).
MAX_INT_DIGITS = 40
_LONG_DIGITS = re.compile(f"[0-9]{{{MAX_INT_DIGITS + 1}}}")


def _no_constants(name: str) -> Any:
    # NaN/Infinity are not JSON; accepting them would also make the witness line unserialisable.
    raise _NotJson(f"not JSON: {name}")


def _finite(text: str) -> float:
    # 1e999 is JSON, but Python reads it as inf, which no witness line can hold: a strict provider refuses it too.
    value = float(text)
    if not math.isfinite(value):
        raise _NotJson(f"not JSON this provider reads: the number {text[:40]} overflows to infinity")
    return value


def _bounded(text: str) -> int:
    # The witness reader refuses longer integers (orchestrator/evidence/jsonread.py MAX_INT_DIGITS): one in a body
    # the witness records would make the whole witness unreadable.
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _NotJson(f"not JSON this provider reads: an integer of {len(text)} digits (more than {MAX_INT_DIGITS})")
    return int(text)


def parse_json_body(body: bytes) -> Any:
    """The body parsed as strict JSON in UTF-8; raises ValueError when it is empty, not JSON, or holds a value no
    witness line can carry (a number past float range, an integer past MAX_INT_DIGITS, a lone surrogate)."""
    if not body.strip():
        raise _NotJson("empty body")
    # UTF-8 only (a UTF-8 BOM allowed, as json.loads allows it): json.loads would also take UTF-16 and UTF-32, which
    # no provider's API does, and bytes that encode a surrogate, which are not UTF-8 at all.
    try:
        text = body.decode("utf-8-sig" if body.startswith(codecs.BOM_UTF8) else "utf-8")
    except UnicodeDecodeError as exc:
        raise _NotJson(f"not JSON: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    if _LONG_DIGITS.search(text) is None:
        value = json.loads(text, parse_constant=_no_constants, parse_float=_finite)
    else:  # only a text with a long enough run of digits pays for a hook per integer
        value = json.loads(text, parse_constant=_no_constants, parse_float=_finite, parse_int=_bounded)
    if "\\u" in text:
        _no_lone_surrogate(value)
    return value


def _no_lone_surrogate(value: Any) -> None:
    try:
        # One C pass: a lone surrogate (from a \uD800-\uDFFF escape) is the only thing that does not encode as UTF-8.
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = ord(exc.object[exc.start])
        raise _NotJson(f"not JSON this provider reads: a lone surrogate (\\u{bad:04x}) in a string") from None


def json_bytes(body: Mapping[str, Any]) -> bytes:
    return json.dumps(body, separators=(",", ":"), allow_nan=False).encode("utf-8")
