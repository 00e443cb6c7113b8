"""Turns off mitmproxy's debug-only type assertion on every HTTP message, in the proxy process only.

Why: mitmproxy (12.3.1, pinned) checks the type of every field of every request and response it creates with
`typecheck.check_option_type` in `MessageData.__post_init__`, a block it defines only `if __debug__` (so `python -O`
drops it). It is an assertion about mitmproxy's own code, never about what a client sent: the parser and our addon
always build the fields from bytes, `Headers` and floats. On this machine it cost 150-300 us per message, a request
and a reply each, about a sixth of the proxy's CPU per request. `python -O` would also drop every `assert` of
mitmproxy and of this addon and would need its own byte-code, so only this one assertion goes. The unit tests run
with it (they do not call this), so a field of the wrong type built by this addon still fails there.
"""

from __future__ import annotations

from typing import Any

from mitmproxy import http


def _unchecked(self: Any) -> None:
    # The generated dataclass __init__ calls __post_init__ by name; this is what -O leaves of it.
    return None


def skip_message_typechecks() -> bool:
    """Replace the assertion with a no-op; False when there was none (python -O) or it is already off."""
    current = http.MessageData.__dict__.get("__post_init__")
    if current is None or current is _unchecked:
        return False
    http.MessageData.__post_init__ = _unchecked  # type: ignore[method-assign]
    return True
