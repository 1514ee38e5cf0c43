"""Every item of a paginated list, within bounds (basic/utilities/pagination).

A server hands a list out a page at a time, each page with an opaque ``nextCursor`` until the
last. A server may hand out a fresh cursor forever, or the same one again: the pages
followed and the items kept are bounded (``max_list_pages``, ``max_list_items``), and a
cursor given twice ends the listing at once (it would loop).
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from typing import Any, Final

from ._errors import BadMessage, ClientError

__all__ = ["MAX_LIST_ITEMS", "MAX_LIST_PAGES", "Pages"]

#: Pages and items one ``all_*`` listing follows before it stops with an error: a server that
#: hands out a fresh ``nextCursor`` with every page would otherwise be followed without end
#: (and every page kept). A thousand pages is what FastMCP's and the Ruby SDK's clients
#: allow; 100,000 items is a thousand pages of a hundred, far past any real catalogue.
MAX_LIST_PAGES: Final = 1000
MAX_LIST_ITEMS: Final = 100_000


class Pages:
    """The bounds of one client's listings; :meth:`all` follows one.

    The ``Client``'s ``all_*`` methods call it, each listing with its own cursors and
    count. What it keeps is bounded whatever the server sends: at most ``max_pages`` pages
    and ``max_items`` items (each page itself bounded by the client's
    ``max_message_size``), and one 16-byte digest per cursor seen. Bounds below 1 are a
    ValueError when the client is made.
    """

    def __init__(self, max_pages: int = MAX_LIST_PAGES, max_items: int = MAX_LIST_ITEMS) -> None:
        if max_pages < 1 or max_items < 1:
            raise ValueError("max_list_pages and max_list_items must be at least 1")
        self.max_pages = max_pages
        self.max_items = max_items

    async def all(
        self, lister: Callable[[str | None], Awaitable[Any]], field: str, method: str
    ) -> list[Any]:
        """The items of every page ``lister(cursor)`` gives (``page.<field>``), following
        ``page.next_cursor``. :class:`ClientError` past ``max_pages`` pages or ``max_items``
        items (naming the limit); :class:`BadMessage` for a cursor given twice."""
        items: list[Any] = []
        cursor: str | None = None
        # Digests, not the cursors: a cursor may be as long as a message (4 MiB), and a
        # thousand of them kept would be the memory this bound is here to cap.
        seen: set[bytes] = set()
        for _page in range(self.max_pages):
            page = await lister(cursor)
            items.extend(getattr(page, field))
            if len(items) > self.max_items:
                raise ClientError(
                    f"{method}: the server listed more than {self.max_items} items (max_list_items)"
                )
            cursor = page.next_cursor
            if not cursor:
                return items
            digest = hashlib.blake2b(cursor.encode(), digest_size=16).digest()
            if digest in seen:
                raise BadMessage(f"{method}: the server repeated the cursor {cursor[:50]!r}")
            seen.add(digest)
        raise ClientError(
            f"{method}: the server offered more than {self.max_pages} pages (max_list_pages)"
        )
