"""mitmproxy's per-message type assertion is what the proxy turns off, and only in the proxy process."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from mitmproxy import http

from proxy_addons.typechecks import skip_message_typechecks


@pytest.fixture
def restore_post_init() -> Iterator[None]:
    original = http.MessageData.__dict__["__post_init__"]
    try:
        yield
    finally:
        http.MessageData.__post_init__ = original  # type: ignore[attr-defined]


def test_the_assertion_is_on_in_tests_and_off_in_the_proxy(restore_post_init: None) -> None:
    with pytest.raises(TypeError):
        http.ResponseData(b"HTTP/1.1", http.Headers(), "not bytes", None, 0.0, 0.0, 200, b"OK")  # type: ignore[arg-type]
    assert skip_message_typechecks()
    assert not skip_message_typechecks()  # once only
    data = http.ResponseData(b"HTTP/1.1", http.Headers(), "not bytes", None, 0.0, 0.0, 200, b"OK")  # type: ignore[arg-type]
    assert data.content == "not bytes"
    # What the proxy builds is unchanged.
    reply = http.Response.make(200, b'{"ok":true}', {"content-type": "application/json"})
    assert reply.status_code == 200 and reply.content == b'{"ok":true}'
    assert reply.headers["content-type"] == "application/json" and reply.headers["content-length"] == "11"
