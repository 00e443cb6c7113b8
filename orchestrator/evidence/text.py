"""The one sanitiser for harness text at every sink: control characters and lone surrogates written as escapes,
and lengths bounded."""

from __future__ import annotations

import re

__all__ = ["CUT", "bounded", "clean", "is_text"]

# Characters XML 1.0 cannot carry, terminals' escape sequences and lone surrogates (a non-UTF-8 file name read with
# surrogateescape, a \ud800 escape): harness output is full of them, and a lone surrogate makes every UTF-8 writer
# (a terminal, a report, a JSON file) raise. Bidirectional controls (U+061C, U+200E-F, U+202A-E, U+2066-9) too:
# they reorder what is shown after them, so a reason could read backwards or a file name show a false extension.
# And the characters that show as nothing (soft hyphen, zero-width space and joiners, word joiner and the invisible
# operators, BOM, variation selectors, tag characters, fillers, interlinear annotation marks): `call_1\u200b` and
# `call_1` would read as one id where a check says they differ.
_UNPRINTABLE = re.compile(
    "[^\t\n\r\x20-\x7e\xa0-\xac\xae-\u034e\u0350-\u061b\u061d-\u115e\u1161-\u17b3\u17b6-\u180a"
    "\u1810-\u200a\u2010-\u2029\u202f-\u205f\u2065\u206a-\u3163\u3165-\ud7ff\ue000-\ufdff\ufe10-\ufefe"
    "\uff00-\uff9f\uffa1-\ufff8\ufffc-\ufffd\U00010000-\U000dffff\U000e0080-\U000e00ff\U000e01f0-\U0010ffff]"
)


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group())
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def clean(text: str) -> str:
    """Make text safe for every sink (terminal, reports, JSON): control characters and lone surrogates become
    escapes."""
    return _UNPRINTABLE.sub(_escape, text)


def is_text(name: str) -> bool:
    """Whether `name` is Unicode text: not a name read in bytes that are not UTF-8 (surrogateescape), which JSON
    text cannot hold."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


CUT = "characters left out)"
_WORD = 40  # how far a cut moves to fall between words


def bounded(text: str, limit: int) -> str:
    """text, or its start and its end with how much was left out between them: the end of a schema's message says
    what is wrong (`is too long`, `is not of type 'string'`), its start where. Both cuts fall between words where a
    space is near, so no id is cut into another id (the episode page marks the ids a reason names)."""
    if len(text) <= limit:
        return text
    head = limit - limit // 4
    tail = len(text) - limit // 4
    space = text.rfind(" ", head - _WORD, head)
    head = space if space > 0 else head
    space = text.find(" ", tail, tail + _WORD)
    tail = space + 1 if space >= 0 else tail
    return f"{text[:head]} … ({tail - head:,} {CUT} … {text[tail:]}"
