"""The one sanitiser for harness text at every sink: control characters and lone surrogates written as escapes."""

from __future__ import annotations

import re

__all__ = ["clean"]

# Characters XML 1.0 cannot carry, terminals' escape sequences and lone surrogates (a non-UTF-8 file name read with
# surrogateescape, a \ud800 escape): harness output is full of them, and a lone surrogate makes every UTF-8 writer
# (a terminal, a report, a JSON file) raise.
_UNPRINTABLE = re.compile("[^\t\n\r\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(text: str) -> str:
    """Make text safe for every sink (terminal, reports, JSON): control characters and lone surrogates become
    escapes."""
    return _UNPRINTABLE.sub(_escape, text)
