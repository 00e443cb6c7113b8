"""A request body's content-encoding removed under the body cap: a compressed body is never inflated past it."""

from __future__ import annotations

import zlib

import brotli  # type: ignore[import-untyped]  # no stubs; used for its Decompressor only
from backports import zstd

__all__ = ["decode_body"]

# mitmproxy's own reading of each encoding (mitmproxy/net/encoding.py, 12.3.1, pinned), which this keeps, bounded:
# gzip is one stream whose header zlib detects (gzip or zlib, wbits 32 + 15), anything after it ignored; deflate is
# zlib's stream, else raw deflate; zstd is every frame in turn.
_GZIP_OR_ZLIB = 32 + zlib.MAX_WBITS
_DEFLATE_WBITS = (zlib.MAX_WBITS, -zlib.MAX_WBITS)
# Real clients send one zstd frame; each frame costs a copy of what follows it, so a body of a million tiny frames
# would take minutes of the proxy's only thread. Past this many the body is kept as sent.
MAX_ZSTD_FRAMES = 64


class _OverCap(Exception):
    pass


class _Undecodable(Exception):
    pass


def decode_body(raw: bytes, encoding: str | None, cap: int) -> bytes | None:
    """The body with `encoding` removed, or None when it inflates past `cap` bytes.

    Each encoding mitmproxy decodes (gzip, x-gzip, deflate, deflateraw, br, zstd) is inflated a bounded piece at a
    time, as mitmproxy reads it (a 1.6 KB brotli body is 1,000 MiB inflated, which mitmproxy's own decoding holds
    whole before any cap can look at it). A body that does not decode, and any other encoding, is kept as sent, as
    mitmproxy keeps a body it cannot decode: mitmproxy's fallback to Python's codecs (bz2, zlib, rot13) inflates
    without bound, and raised past the addon on some.
    """
    name = (encoding or "").strip().lower()
    if not raw or name in ("", "identity", "none"):
        return raw
    try:
        if name in ("gzip", "x-gzip"):
            return _inflate(zlib.decompressobj(_GZIP_OR_ZLIB), raw, cap, whole=False)
        if name in ("deflate", "deflateraw"):
            for wbits in _DEFLATE_WBITS:
                try:
                    return _inflate(zlib.decompressobj(wbits), raw, cap, whole=True)
                except zlib.error:
                    continue
            return raw
        if name == "br":
            return _unbrotli(raw, cap)
        if name == "zstd":
            return _unzstd(raw, cap)
    except _OverCap:
        return None
    except (zlib.error, brotli.error, zstd.ZstdError, EOFError, _Undecodable):
        return raw
    return raw


def _inflate(d: zlib._Decompress, data: bytes, cap: int, whole: bool) -> bytes:
    """One zlib stream of `data` inflated, what follows its end ignored (as mitmproxy does), past `cap` never held.
    whole: a stream cut short is refused (mitmproxy's deflate, zlib.decompress); else what it gave is kept (its gzip,
    a decompressor flushed)."""
    out: list[bytes] = []
    total = 0
    while data and not d.eof:
        piece = d.decompress(data, cap + 1 - total)
        total += len(piece)
        if total > cap:
            raise _OverCap
        out.append(piece)
        data = d.unconsumed_tail
    if not d.eof:
        if whole:
            raise zlib.error("the stream ends before its end")
        rest = d.flush()
        total += len(rest)
        if total > cap:
            raise _OverCap
        out.append(rest)
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
            raise _Undecodable  # the stream ends before its end: brotli.decompress refuses it too


def _unzstd(raw: bytes, cap: int) -> bytes:
    out: list[bytes] = []
    total = 0
    data = raw
    for _ in range(MAX_ZSTD_FRAMES):
        d = zstd.ZstdDecompressor()
        piece = d.decompress(data, cap + 1 - total)
        while True:
            total += len(piece)
            if total > cap:
                raise _OverCap
            out.append(piece)
            if d.eof or d.needs_input:
                break
            piece = d.decompress(b"", cap + 1 - total)
        if not d.eof:
            raise _Undecodable  # a frame cut short: zstd.decompress refuses it too
        data = d.unused_data
        if not data:
            return b"".join(out)
    raise _Undecodable
