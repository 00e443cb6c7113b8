"""A request body's content-encoding removed under the body cap: a compressed body is never inflated past it."""

from __future__ import annotations

import zlib
from collections.abc import Callable

import brotli  # type: ignore[import-untyped]  # no stubs; used for its Decompressor only

__all__ = ["decode_body"]

_GZIP = 16 + zlib.MAX_WBITS
# zlib's stream for `deflate` as the HTTP spec names it; raw deflate for the servers and clients that send that.
_DEFLATE_WBITS = (zlib.MAX_WBITS, -zlib.MAX_WBITS)


class _OverCap(Exception):
    pass


def decode_body(raw: bytes, encoding: str | None, cap: int, fallback: Callable[[], bytes | None]) -> bytes | None:
    """The body with `encoding` removed, or None when it decodes to more than `cap` bytes.

    gzip, deflate and br are inflated here a bounded piece at a time (a 1.6 KB brotli body is 1,000 MiB inflated,
    which mitmproxy's own decoding holds whole before any cap can look at it). Any other encoding goes to
    `fallback` (mitmproxy's lenient decoding); a body that does not decode is kept as sent, as mitmproxy keeps it.
    """
    name = (encoding or "").strip().lower()
    try:
        if name in ("", "identity"):
            return raw
        if name in ("gzip", "x-gzip"):
            return _inflate_members(raw, cap)
        if name == "deflate":
            for wbits in _DEFLATE_WBITS:
                try:
                    return _inflate(zlib.decompressobj(wbits), raw, cap)[0]
                except zlib.error:
                    continue
            return raw
        if name == "br":
            return _unbrotli(raw, cap)
    except _OverCap:
        return None
    except (zlib.error, brotli.error):
        return raw
    decoded = fallback()
    return None if decoded is not None and len(decoded) > cap else decoded


def _inflate(d: zlib._Decompress, data: bytes, cap: int) -> tuple[bytes, bytes]:
    """(what `d` inflates `data` to, what is left after its stream's end), past `cap` never held."""
    out: list[bytes] = []
    total = 0
    while data:
        piece = d.decompress(data, cap + 1 - total)
        total += len(piece)
        if total > cap:
            raise _OverCap
        out.append(piece)
        data = d.unconsumed_tail
        if d.eof:
            break
    if not d.eof:
        raise zlib.error("the compressed stream ends before its end")
    return b"".join(out), d.unused_data


def _inflate_members(raw: bytes, cap: int) -> bytes:
    """gzip: every member in turn, as gzip.decompress reads them."""
    out: list[bytes] = []
    total = 0
    rest = raw
    while rest:
        piece, rest = _inflate(zlib.decompressobj(_GZIP), rest, cap - total)
        total += len(piece)
        out.append(piece)
    return b"".join(out)


def _unbrotli(raw: bytes, cap: int) -> bytes:
    d = brotli.Decompressor()
    out: list[bytes] = []
    total = 0
    data = raw
    while True:
        piece = d.process(data, output_buffer_limit=cap + 1 - total)
        data = b""
        total += len(piece)
        if total > cap:
            raise _OverCap
        out.append(piece)
        if d.is_finished():
            return b"".join(out)
        if d.can_accept_more_data():
            raise brotli.error("the compressed stream ends before its end")
