"""Text a peer chose (a method name, a tool name, a header value, an error message), made
safe for one field of a one-line log.

DESIGN.md "Logging": log lines are structured, one line each, key=value, so that logs can
be searched. A peer that can put a line break in a value it sends can forge whole log
lines ("log forging", CWE-117); one that can put a space and ``key=`` in it can forge
fields; one that can put terminal control sequences in it can rewrite what an operator
sees. :func:`loggable` is applied where such a value enters a log line.

A JSON log line is escaped by its encoder, but not wholly: JSON leaves DEL, the C1
controls, U+2028/U+2029 and the format characters raw (RFC 8259 section 7 only requires
escaping U+0000-U+001F), and ``str.splitlines``, some log viewers and terminals act on
them. :func:`escape_json_text` escapes those in an encoder's output.
"""

from __future__ import annotations

import re
from typing import Final

from ._errors import EXCERPT_LIMIT

__all__ = ["REDACTED", "escape_json_text", "loggable", "redact_url"]

#: A value that passes unchanged: printable ASCII but for the space, the double quote and
#: the backslash (the characters that delimit or escape a field). Method names, tool names,
#: ids and URIs nearly always match: their fast path is one ``fullmatch``.
_PLAIN: Final = re.compile(r"[!#-\[\]-~]+")
#: What a quoted value must escape: its quote and backslash, and anything not printable
#: ASCII (the printable rest of Unicode is kept, and checked one character at a time).
_SPECIAL: Final = re.compile(r'["\\]|[^ -~]')
#: What a masked value is shown as.
REDACTED: Final = "[REDACTED]"
#: ``scheme:`` (RFC 3986 section 3.1), then ``//userinfo@`` when the URI has one.
_URL: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:(?://([^/?#]*@))?")
_SHORT: Final = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    short = _SHORT.get(char)
    if short is not None:
        return short
    if char.isprintable():  # a letter, a digit, a symbol of any script
        return char
    # Controls (C0, DEL, C1: terminal sequences), line and paragraph separators (U+2028,
    # U+2029, which str.splitlines and some log viewers break lines at), format characters
    # (bidirectional overrides that reorder what is shown) and every other space but U+0020.
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def loggable(value: object, limit: int = EXCERPT_LIMIT) -> str:
    """``value`` (``str()`` of it when it is not a string) as one field of a one-line log.

    A string of printable ASCII without a space, ``"`` or ``\\`` passes unchanged
    (``tools/call``). Anything else is quoted as logfmt does (``"two words"``, ``""``):
    inside the quotes ``"`` and ``\\`` are escaped, as are line breaks (``\\n``, ``\\r``),
    tabs, every other control, the Unicode line separators and invisible format characters
    (``\\xNN``, ``\\uNNNN``), so the result never holds a line break or a terminal
    control sequence, and a field never runs into the next. Printable non-ASCII text
    (``"café"``) is kept as it is. At most ``limit`` characters of the value are kept (a
    peer chooses its length too); a longer one ends with ``...``.
    """
    text = value if isinstance(value, str) else str(value)
    cut = len(text) > limit
    if cut:
        text = text[:limit]
    if _PLAIN.fullmatch(text) is not None:
        return text + "..." if cut else text
    return '"' + _SPECIAL.sub(_escape, text) + ('..."' if cut else '"')


#: The characters a JSON encoder may leave raw that are not printable ASCII.
_NOT_ASCII: Final = re.compile(r"[^\x00-\x7f]")


def _json_escape(match: re.Match[str]) -> str:
    char = match.group()
    if char.isprintable():
        return char
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000  # RFC 8259 section 7: beyond the BMP, a UTF-16 surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def escape_json_text(text: str) -> str:
    """``text``, a JSON text an encoder wrote, with every character that is not printable
    (DEL, the C1 controls, U+2028, U+2029, format and other invisible characters) written
    as its ``\\uXXXX`` escape: the same JSON value, on one line whatever reads it.
    Printable non-ASCII text is kept. (Outside strings a JSON text holds only ASCII, so
    every such character is inside a string, where the escape is valid.)"""
    if text.isascii():
        return text.replace("\x7f", "\\u007f")
    return _NOT_ASCII.sub(_json_escape, text.replace("\x7f", "\\u007f"))


def redact_url(url: str) -> str:
    """``url`` with what may be a credential masked: the userinfo (``user:password@``,
    RFC 3986 section 3.2.1, which RFC 9110 section 4.2.4 forbids senders to use) is
    dropped, each query parameter's value and the fragment are ``[REDACTED]`` (API keys,
    signatures and OAuth codes travel there). A string without a scheme is returned as it
    is."""
    match = _URL.match(url)
    if match is None:
        return url
    if match.group(1) is not None:
        url = url[: match.start(1)] + url[match.end(1) :]
    head, hash_, _ = url.partition("#")
    head, question, query = head.partition("?")
    if question:
        head += "?" + "&".join(
            f"{name}={REDACTED}" if eq else REDACTED
            for name, eq, _ in (part.partition("=") for part in query.split("&"))
        )
    return head + ("#" + REDACTED if hash_ else "")
