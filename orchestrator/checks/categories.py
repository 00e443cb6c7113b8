"""What a failed call's error category claims about how its attempt ended, held to how the wire shows it ended."""

from __future__ import annotations

import re
from typing import Any

from orchestrator.checks.join import witness_key

__all__ = ["category_reason"]

# Matched in any letter case, with `_`, `-`, a space or nothing before the status: `HTTP_500` or `http-500` on a
# 429 says the same wrong thing `http_500` does (no harness of ours writes one, so honest records do not move).
_HTTP_CATEGORY = re.compile(r"http[_\- ]?([0-9]{3})", re.IGNORECASE)
# Categories that name a transport failure: no complete HTTP reply was seen. A complete error reply called one of
# these is a wrong category, except a gateway/request timeout status, which a harness may fairly call `timeout`.
_TRANSPORT = frozenset({"timeout", "connection", "stream_cut", "reset", "cut", "withheld"})
_TIMEOUT_STATUSES = frozenset({408, 504})
# The transport categories each way an incomplete reply ended allows. A withheld reply (nothing sent, the connection
# held open) ends only when the harness stops waiting: a timeout, as the scenario scripted it; calling it a cut
# stream or a failed connection says the wire did something it did not. A cut stream may have been cut by the proxy
# or abandoned by a client that timed out mid-stream; a reset is a connection that failed.
_ENDED_AS = {
    # A 200 delivered whole that no client could use (a malformed event, an error event, an HTML page): it was neither
    # cut nor timed out, and no connection failed; only a category of the harness's own naming fits it.
    "complete": frozenset(),
    "withheld": frozenset({"timeout", "withheld"}),
    "cut": frozenset({"stream_cut", "cut", "connection", "reset", "timeout"}),
    "reset": frozenset({"connection", "reset", "stream_cut", "cut"}),
}


def _name(c: dict[str, Any]) -> str:
    return str(c.get("model_call_id"))


def category_reason(c: dict[str, Any], a: dict[str, Any]) -> str | None:
    """Why the call's category is not one the attempt's ending allows, or None: an HTTP category must name the
    status of a complete reply, a transport one must fit the way the reply ended; a category of the harness's
    own naming claims no ending and is not judged."""
    written = c.get("error_category")
    if not isinstance(written, str) or not written:
        return None
    # `Timeout` or `STREAM_CUT` names the transport failure `timeout` or `stream_cut` does.
    category = written.lower()
    kind, status = witness_key(a)
    http = _HTTP_CATEGORY.fullmatch(category)
    if http:
        if kind != "error" or status != int(http.group(1)):
            seen = f"HTTP {status} reply" if kind == "error" else f"reply that ended {a.get('ended')!r}"
            return f"{_name(c)}: error_category {written!r}, the wire shows a {seen}"
        return None
    if kind == "error" and category in _TRANSPORT and not (category == "timeout" and status in _TIMEOUT_STATUSES):
        return f"{_name(c)}: error_category {written!r} is a transport failure, the wire shows a complete HTTP {status}"
    allowed = _ENDED_AS.get(str(a.get("ended")), _TRANSPORT)
    if kind == "interrupted" and category in _TRANSPORT and category not in allowed:
        return (
            f"{_name(c)}: error_category {written!r}, the wire shows a reply that ended {a.get('ended')!r} "
            f"(a category of {', '.join(sorted(allowed))})"
        )
    return None
