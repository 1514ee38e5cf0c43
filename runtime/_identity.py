"""Who a server says it is: its MCP ``Implementation`` (``serverInfo``).

The handshake result carries it once per session, but every 2026-07-28 result carries it in
``_meta`` (``io.modelcontextprotocol/serverInfo``), so the wire object is made once and made
again only after a field changes.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Identity"]


class Identity:
    """The fields of a server's ``Implementation`` (MCP 2025-11-25 schema: ``name``,
    ``version``, ``title``, ``icons``, ``websiteUrl``) and its wire object, :attr:`info`."""

    __slots__ = ("icons", "info", "name", "title", "version", "website_url")

    def __init__(
        self,
        name: str,
        version: str,
        title: str | None,
        icons: list[dict[str, Any]] | None,
        website_url: str | None,
    ) -> None:
        self.name = name
        self.version = version
        self.title = title
        #: MCP 2025-11-25 ``Icon`` objects: ``{"src", "mimeType"?, "sizes"?, "theme"?}``.
        self.icons = icons
        self.website_url = website_url
        #: The wire object once made (None: :meth:`make` makes it). Set to None whenever a
        #: field changes; callers must not change it.
        self.info: dict[str, Any] | None = None

    def make(self) -> dict[str, Any]:
        """Make :attr:`info` from the fields: the optional ones only when set."""
        info: dict[str, Any] = {"name": self.name, "version": self.version}
        if self.title is not None:
            info["title"] = self.title
        if self.icons:
            info["icons"] = self.icons
        if self.website_url is not None:
            info["websiteUrl"] = self.website_url
        self.info = info
        return info
