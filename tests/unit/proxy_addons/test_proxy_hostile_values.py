"""What a harness sends that no witness line could carry, or that would sink the proxy before any cap looks at it:
each is refused with a named violation, the proxy goes on serving, and the checker's own reader takes the witness."""

from __future__ import annotations

import bz2
import codecs
import gzip
import json
import zlib
from collections.abc import Callable

import brotli
import pytest
from backports import zstd
from mitmproxy import http
from mitmproxy.flow import Error
from mitmproxy.net import encoding as mitmproxy_encoding
from mitmproxy.test import tflow

from orchestrator.checks.evidence import read_witness
from orchestrator.evidence.jsonread import MAX_INT_DIGITS as READER_INT_DIGITS
from proxy_addons.decoding import MAX_ZSTD_FRAMES, decode_body
from proxy_addons.exchange import MAX_INT_DIGITS, parse_json_body
from proxy_addons.limits import MAX_BODIES_IN_FLIGHT, MAX_BODY_BYTES, MAX_HEAD_BYTES, PATH_SHOWN, declared_body
from tests.unit.proxy_addons.conftest import BASH_TOOL, MakeProvider, Provider, chat_body

HONEST = json.dumps(chat_body([{"role": "user", "content": "hi"}], tools=[BASH_TOOL])).encode()


def _body(value: bytes) -> bytes:
    return b'{"model":"m","temperature":0,"messages":[{"role":"user","content":' + value + b"}]}"


def test_the_proxy_and_the_reader_agree_on_integer_length() -> None:
    assert MAX_INT_DIGITS == READER_INT_DIGITS


REFUSED = {
    "number past float range": _body(b'"x"').replace(b'"temperature":0', b'"temperature":1e999'),
    "integer past the reader's digits": _body(b'"x"').replace(b'"temperature":0', b'"max":' + b"9" * 41),
    "lone surrogate in a string": _body(b'"\\ud800"'),
    "lone low surrogate in a key": b'{"\\udc00":1,' + _body(b'"x"')[1:],
    "surrogate encoded as bytes": _body(b'"\xed\xa0\x80"'),
    "UTF-16": _body(b'"x"').decode().encode("utf-16"),
    "not UTF-8": _body(b'"\xff"'),
}


@pytest.mark.parametrize("body", REFUSED.values(), ids=REFUSED.keys())
def test_a_body_no_witness_line_can_carry_is_not_json(body: bytes) -> None:
    with pytest.raises(ValueError):
        parse_json_body(body)


ACCEPTED = {
    "integer at the reader's digits": (b"9" * 40, 10**40 - 1),
    "largest finite float": (b"1.7976931348623157e308", 1.7976931348623157e308),
    "surrogate pair": (b'"\\ud83d\\ude00"', "\U0001f600"),
    "escaped backslash before u": (b'"\\\\ud800"', "\\ud800"),
}


@pytest.mark.parametrize(("text", "value"), ACCEPTED.values(), ids=ACCEPTED.keys())
def test_values_the_witness_can_carry_are_read(text: bytes, value: object) -> None:
    assert parse_json_body(_body(text))["messages"][0]["content"] == value


def test_a_utf8_bom_is_still_taken() -> None:
    assert parse_json_body(codecs.BOM_UTF8 + HONEST)["model"] == "probe-model"


def _served_after(provider: Provider, flow_status: int | None, status: int) -> None:
    assert flow_status == status
    honest = provider.chat(HONEST)
    assert honest.response is not None and honest.response.status_code == 200


@pytest.mark.parametrize("body", REFUSED.values(), ids=REFUSED.keys())
def test_the_proxy_refuses_it_and_goes_on(make_provider: MakeProvider, body: bytes) -> None:
    provider = make_provider()
    flow = provider.chat(body)
    _served_after(provider, flow.response.status_code if flow.response else None, 400)
    assert provider.addon._fatal is None
    (violation,) = provider.events("violation")
    assert violation["code"] == "bad_request"
    provider.addon.done()
    read_witness(provider.witness)


def _send_raw(
    provider: Provider, path: bytes, raw_body: bytes, headers: dict[str | bytes, str | bytes]
) -> http.HTTPFlow:
    """A request as it came off the wire: its path as bytes, its body as sent (Request.make would encode it)."""
    fields: dict[str | bytes, str | bytes] = {"content-type": "application/json", **headers}
    request = http.Request.make("POST", "http://provider:8080/", b"", fields)
    request.data.path = path
    request.raw_content = raw_body
    flow = tflow.tflow(req=request)
    provider.addon.request(flow)
    return flow


def test_a_path_that_is_not_utf8_is_witnessed_readably(make_provider: MakeProvider) -> None:
    provider = make_provider()
    # mitmproxy decodes a request line's bytes with surrogateescape: \xff arrives as U+DCFF.
    flow = _send_raw(provider, b"/v1/chat/completions\xff", HONEST, {})
    _served_after(provider, flow.response.status_code if flow.response else None, 404)
    provider.addon.done()
    rejected = [a for a in read_witness(provider.witness).attempts(None) if a["kind"] == "rejected"]
    assert [a["path"] for a in rejected] == ["/v1/chat/completions\ufffd"]


@pytest.mark.parametrize(
    ("path", "headers"),
    [
        ("/v1/chat/completions?" + "a" * MAX_HEAD_BYTES, {}),
        ("/v1/chat/completions", {"user-agent": "u" * MAX_HEAD_BYTES}),
    ],
    ids=["long path", "long header"],
)
def test_a_head_past_its_cap_is_refused_and_not_written(
    make_provider: MakeProvider, path: str, headers: dict[str, str]
) -> None:
    provider = make_provider()
    flow = provider.send("POST", path, HONEST, headers)
    _served_after(provider, flow.response.status_code if flow.response else None, 431)
    (violation,) = provider.events("violation")
    assert violation["code"] == "head_over_cap" and violation["size"] > MAX_HEAD_BYTES
    rejected = provider.events("attempt")[0]
    assert rejected["path"] == path[:PATH_SHOWN] and rejected["headers"] == {}
    assert provider.witness.stat().st_size < MAX_HEAD_BYTES


BOMBS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": gzip.compress,
    "x-gzip": gzip.compress,
    "deflate": zlib.compress,
    "deflateraw": lambda b: zlib.compress(b)[2:-4],
    "br": brotli.compress,
    "zstd": zstd.compress,
}


@pytest.mark.parametrize("encoding", BOMBS)
def test_a_compressed_body_is_inflated_only_up_to_the_cap(encoding: str) -> None:
    compress = BOMBS[encoding]
    assert decode_body(compress(b"a" * MAX_BODY_BYTES), encoding, MAX_BODY_BYTES) == b"a" * MAX_BODY_BYTES
    assert decode_body(compress(b"a" * (MAX_BODY_BYTES + 1)), encoding, MAX_BODY_BYTES) is None
    assert decode_body(compress(b"a" * (MAX_BODY_BYTES + 1)), encoding.upper(), MAX_BODY_BYTES) is None


# Bodies under the cap, as a client may send them: each is read as mitmproxy's own decoding reads it.
GZ = gzip.compress(b'{"a":1}')
BODIES: dict[str, tuple[str, bytes]] = {
    "gzip": ("gzip", GZ),
    "gzip of two members (the first is read)": ("gzip", GZ + gzip.compress(b"more")),
    "gzip padded with zeros": ("gzip", GZ + b"\0" * 64),
    "gzip with bytes after it": ("gzip", GZ + b"trailing"),
    "gzip cut short": ("gzip", GZ[:-6]),
    "zlib under gzip": ("gzip", zlib.compress(b'{"a":1}')),
    "not gzip": ("gzip", b"not gzip"),
    "deflate": ("deflate", zlib.compress(b'{"a":1}')),
    "raw deflate": ("deflate", zlib.compress(b'{"a":1}')[2:-4]),
    "deflate cut short": ("deflate", zlib.compress(b'{"a":1}' * 50)[:-8]),
    "br": ("br", brotli.compress(b'{"a":1}')),
    "br cut short": ("br", brotli.compress(b'{"a":1}' * 50)[:-3]),
    "zstd of two frames": ("zstd", zstd.compress(b'{"a":') + zstd.compress(b"1}")),
    "zstd cut short": ("zstd", zstd.compress(b'{"a":1}' * 50)[:-3]),
    "identity": ("identity", b'{"a":1}'),
}


@pytest.mark.parametrize(("encoding", "raw"), BODIES.values(), ids=BODIES.keys())
def test_decoding_reads_what_mitmproxy_reads(encoding: str, raw: bytes) -> None:
    try:
        expected = mitmproxy_encoding.decode(raw, encoding)
    except ValueError:  # mitmproxy keeps a body it cannot decode as sent (get_content(strict=False))
        expected = raw
    assert decode_body(raw, encoding, MAX_BODY_BYTES) == expected


@pytest.mark.parametrize("encoding", ["rot13", "bz2", "zlib", "base64", "gzip, br", "compress"])
def test_an_encoding_mitmproxy_would_hand_to_pythons_codecs_is_kept_as_sent(encoding: str) -> None:
    # Python's codecs inflate bz2 and zlib without bound, and raise past the addon on rot13 (a TypeError that
    # stopped the proxy): the body is kept as sent, and is then no JSON (a witnessed 400).
    bomb = bz2.compress(b"a" * (4 * MAX_BODY_BYTES))
    assert decode_body(bomb, encoding, MAX_BODY_BYTES) == bomb


def test_many_zstd_frames_are_kept_as_sent() -> None:
    frames = zstd.compress(b"") * 100_000
    assert decode_body(frames, "zstd", MAX_BODY_BYTES) == frames
    assert decode_body(zstd.compress(b"a") * MAX_ZSTD_FRAMES, "zstd", MAX_BODY_BYTES) == b"a" * MAX_ZSTD_FRAMES


def test_a_compression_bomb_is_refused_over_the_cap(make_provider: MakeProvider) -> None:
    provider = make_provider()
    bomb = brotli.compress(b" " * (64 * MAX_BODY_BYTES))
    flow = _send_raw(provider, b"/v1/chat/completions", bomb, {"content-encoding": "br"})
    _served_after(provider, flow.response.status_code if flow.response else None, 413)
    (violation,) = provider.events("violation")
    assert violation["code"] == "body_over_cap" and violation["size"] == len(bomb)
    assert "inflates" in violation["detail"]


def _arriving(provider: Provider, length: str | None, path: str = "/v1/chat/completions") -> http.HTTPFlow:
    """A request whose head has arrived and whose body has not: mitmproxy's `requestheaders` hook."""
    headers: dict[str | bytes, str | bytes] = {"content-type": "application/json"}
    if length is None:
        headers["transfer-encoding"] = "chunked"
    else:
        headers["content-length"] = length
    request = http.Request.make("POST", "http://provider:8080" + path, b"", headers)
    if length is not None:
        request.headers["content-length"] = length  # make() set it from the empty content
    flow = tflow.tflow(req=request)
    provider.addon.requestheaders(flow)
    return flow


def test_bodies_arriving_at_once_are_bounded_and_the_refusal_witnessed(make_provider: MakeProvider) -> None:
    provider = make_provider()
    held = [_arriving(provider, str(MAX_BODY_BYTES)) for _ in range(MAX_BODIES_IN_FLIGHT // MAX_BODY_BYTES)]
    assert all(f.error is None for f in held)
    crowded = _arriving(provider, None, "/v1/chat/completions?" + "a" * MAX_HEAD_BYTES)  # chunked: a whole cap
    assert crowded.error is not None and crowded.error.msg == "Connection killed."
    (violation,) = provider.events("violation")
    assert violation["code"] == "bodies_in_flight" and f"{MAX_BODIES_IN_FLIGHT} bytes" in violation["detail"]
    (attempt,) = provider.events("attempt")
    assert (attempt["kind"], attempt["status"], attempt["ended"]) == ("rejected", None, "reset")
    assert len(attempt["path"]) == PATH_SHOWN  # a long head is witnessed bounded here too
    # Small bodies and bodies that arrived make room: the budget counts what is still arriving.
    assert _arriving(provider, "0").error is None
    for flow in held[:1]:
        flow.request.content = HONEST
        provider.addon.request(flow)
        assert flow.response is not None and flow.response.status_code == 200
    assert _arriving(provider, str(MAX_BODY_BYTES)).error is None
    provider.addon.error(held[1])  # a client that left mid-body frees its share too
    assert _arriving(provider, "1").error is None


def test_declared_body_sizes() -> None:
    assert declared_body(None, False) == 0 and declared_body("0", False) == 0
    assert declared_body(None, False, framed=True) == MAX_BODY_BYTES  # HTTP/2 with no length: unknown
    assert declared_body("12", False, framed=True) == 12
    assert declared_body("12", False) == 12 and declared_body(None, True) == MAX_BODY_BYTES
    assert declared_body("9" * 30, False) == MAX_BODY_BYTES and declared_body("-1", False) == MAX_BODY_BYTES


def test_a_request_that_never_arrives_whole_is_witnessed(make_provider: MakeProvider) -> None:
    provider = make_provider()
    cut = _arriving(provider, "1000")
    cut.error = Error("Client disconnected.")
    provider.addon.error(cut)
    # Killed: mitmproxy sends no error page of its own, and the witness says no reply was sent.
    assert cut.error is not None and cut.error.msg == "Connection killed."
    # Heads mitmproxy answers 400 itself: a length its HTTP/1 reader cannot read, and one its request validation
    # refuses (the error is set before the requestheaders hook).
    unreadable = _arriving(provider, "-1")
    unreadable.error = Error("Invalid Content-Length header")
    provider.addon.error(unreadable)
    request = http.Request.make("CONNECT", "http://provider:443/", b"", {})
    invalid = tflow.tflow(req=request)
    invalid.error = Error("Invalid HTTP request form (expected: absolute, got: authority)")
    provider.addon.requestheaders(invalid)
    provider.addon.error(invalid)
    violations = provider.events("violation")
    assert [v["code"] for v in violations] == ["bad_request"] * 3
    assert "closed unanswered: Client disconnected." in violations[0]["detail"]
    assert all("answered 400 by the proxy's HTTP layer" in v["detail"] for v in violations[1:])
    attempts = provider.events("attempt")
    assert [(a["kind"], a["method"], a["status"], a["ended"]) for a in attempts] == [
        ("rejected", "POST", None, "reset"),
        ("rejected", "POST", 400, "complete"),
        ("rejected", "CONNECT", 400, "complete"),
    ]
    # A request that arrived whole is not witnessed twice when it ends in an error later.
    whole = _arriving(provider, str(len(HONEST)))
    whole.request.content = HONEST
    provider.addon.request(whole)
    whole.error = Error("Client disconnected.")
    provider.addon.error(whole)
    assert len(provider.events("violation")) == 3
