"""Opaque, validated pagination cursors (MCP server/utilities/pagination).

A cursor is ``base64url(kind ":" offset ":" mac)`` where ``mac`` is a truncated HMAC-SHA256
under a per-server random key: clients cannot forge or reuse a cursor across list kinds, and
any cursor we did not issue is rejected with -32602 (spec: "Invalid cursors SHOULD result in
an error with code -32602"). Cursors do not survive a server restart; a stale one is invalid.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
from collections.abc import Sequence
from typing import Final, TypeVar

from ..protocol import JSONRPCError

__all__ = ["CursorCodec"]

T = TypeVar("T")
_MAC_BYTES: Final = 12


class CursorCodec:
    """Pages a list and issues/validates its cursors. ``page_size`` None: one page."""

    def __init__(self, page_size: int | None, key: bytes | None = None) -> None:
        if page_size is not None and page_size < 1:
            raise ValueError("page_size must be at least 1 or None")
        self.page_size = page_size
        self._key = key or os.urandom(32)

    def _mac(self, body: bytes) -> bytes:
        return hmac.new(self._key, body, hashlib.sha256).digest()[:_MAC_BYTES]

    def encode(self, kind: str, offset: int) -> str:
        body = f"{kind}:{offset}".encode()
        return base64.urlsafe_b64encode(body + b":" + self._mac(body)).decode().rstrip("=")

    def decode(self, kind: str, cursor: str) -> int:
        """The offset a cursor stands for; raises JSONRPCError(-32602) for any other cursor."""
        try:
            raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
            body, mac = raw[: -_MAC_BYTES - 1], raw[-_MAC_BYTES:]
            if raw[-_MAC_BYTES - 1 : -_MAC_BYTES] != b":" or not hmac.compare_digest(
                mac, self._mac(body)
            ):
                raise ValueError("bad mac")
            cursor_kind, _, offset_text = body.decode().partition(":")
            if cursor_kind != kind:
                raise ValueError("wrong list")
            offset = int(offset_text)
        except (ValueError, binascii.Error, UnicodeDecodeError):
            raise JSONRPCError.invalid_params("Invalid cursor", {"cursor": cursor[:100]}) from None
        return offset

    def page(self, kind: str, items: Sequence[T], cursor: str | None) -> tuple[list[T], str | None]:
        """One page of ``items`` from ``cursor`` on, and the cursor of the next page."""
        start = 0 if cursor is None else self.decode(kind, cursor)
        if self.page_size is None:
            if start:
                raise JSONRPCError.invalid_params("Invalid cursor", {"cursor": cursor})
            return list(items), None
        end = start + self.page_size
        page = list(items[start:end])
        return page, (self.encode(kind, end) if end < len(items) else None)
