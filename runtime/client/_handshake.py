"""The client's side of the lifecycle: which era it speaks, and a handshake-era session kept.

:meth:`Handshake.start` chooses the era before any request goes (2026-07-28
basic/versioning, "Backward Compatibility"):

- ``modern``: ``server/discover``; a server that does not list 2026-07-28 among its
  ``supportedVersions`` is an error.
- ``handshake``: ``initialize`` at ``handshake_version``, then ``notifications/initialized``
  (basic/lifecycle); a server that answers with a revision this client does not speak is an
  error.
- ``auto``: ``server/discover`` first; a refusal (an error answer) means the handshake era.
  Over stdio a server that predates 2026-07-28 may exit (or close its stdout) in answer to
  the probe instead of refusing it (a request before ``initialize``): the server is started
  once more and the handshake done; a second exit is an error (``TransportLost``), never a
  loop. The probe is not sent again on the new process.

A handshake-era session is the server's memory of the client: a new link (a reconnect) or a
session the server lost (HTTP 404 on ``Mcp-Session-Id``) needs a new ``initialize``, and the
new session knows nothing of the old one, so the log level and the resource subscriptions
are set again (:meth:`Handshake.renew`).
"""

from __future__ import annotations

import logging
from typing import Any, Literal

import msgspec
import trio

from ..framing import loggable
from ..protocol import (
    HANDSHAKE_VERSIONS,
    INITIALIZE,
    LOGGING_SET_LEVEL,
    META_SERVER_INFO,
    RESOURCES_SUBSCRIBE,
    RESOURCES_UNSUBSCRIBE,
    SERVER_DISCOVER,
    UNSUPPORTED_PROTOCOL_VERSION,
    Implementation,
)
from ._caller import Caller
from ._decode import decode_as, decode_value
from ._errors import BadMessage, ClientError, PeerError, TransportLost
from ._outgoing import RequestBuilder
from ._types import ServerDescription

__all__ = ["Era", "Handshake"]

log = logging.getLogger("mcp_runtime.client")

Era = Literal["auto", "modern", "handshake"]


class Handshake:
    """The era and the session of one client (see the module docstring). ``description``
    is what the server said about itself (``initialize`` / ``server/discover``).

    An unknown era or ``handshake_version`` is a ValueError when it is made, before anything
    is connected. Three callers, each at its moment: ``open_client`` runs :meth:`start`
    once, before the client is yielded; the keeper's resume runs :meth:`after_reconnect`
    on each new link, before requests may go on it; the HTTP link runs :meth:`reinitialize`
    when the server lost the session. A session's renewal (the log level, the
    subscriptions) is best effort: a failure there is logged, never raised to a request.
    """

    def __init__(
        self,
        caller: Caller,
        nursery: trio.Nursery,
        *,
        requested_era: Era,
        handshake_version: str,
    ) -> None:
        if requested_era not in ("auto", "modern", "handshake"):
            raise ValueError(
                f"unknown era {requested_era!r} (expected 'auto', 'modern' or 'handshake')"
            )
        if handshake_version not in HANDSHAKE_VERSIONS:
            raise ValueError(
                f"unknown handshake version {handshake_version!r} "
                f"(expected one of {', '.join(HANDSHAKE_VERSIONS)})"
            )
        self._caller = caller
        self._conversation = caller.conversation
        self._builder: RequestBuilder = caller.builder
        self._nursery = nursery
        self.requested_era: Era = requested_era
        #: The revision offered in ``initialize`` (2025-03-26 is the one with batches).
        self.handshake_version = handshake_version
        self.description: ServerDescription | None = None
        #: Handshake sessions re-initialized after the server lost ours.
        self.reinitializations = 0
        #: Resource subscriptions of the session (uri -> holders), renewed on a new one.
        self.subscriptions: dict[str, int] = {}

    async def start(self) -> None:
        """Choose the era (see the module docstring); requests may go once it returns."""
        conversation = self._conversation
        keeper = conversation.keeper
        if self.requested_era in ("auto", "modern"):
            connector = conversation.connector
            respawn_for_probe = (
                self.requested_era == "auto"
                and getattr(connector, "restart_after_probe", False)
                and not connector.reconnects
            )
            keeper.reopen_once = respawn_for_probe
            try:
                await self.discover(repeatable=not respawn_for_probe)
                self._caller.era = "modern"
                conversation.requests_may_go()
                return
            except PeerError as exc:
                if self.requested_era == "modern":
                    raise
                log.info("server/discover refused (%s): falling back to initialize", loggable(exc))
            except TransportLost as exc:
                if not respawn_for_probe or keeper.reopen_once:
                    raise  # not a stdio probe, or the link was not lost (a send failed)
                log.info("the server exited at server/discover (%s): the handshake", loggable(exc))
            finally:
                keeper.reopen_once = False
        self._caller.era = "handshake"
        await self.initialize()
        conversation.requests_may_go()

    async def discover(self, *, repeatable: bool = True) -> ServerDescription:
        """``server/discover`` (2026-07-28 server/discovery)."""
        raw = await self._caller.raw(
            SERVER_DISCOVER, {}, modern=True, repeatable=repeatable, early=True
        )
        data = decode_value(raw, SERVER_DISCOVER)
        if not isinstance(data, dict):
            raise BadMessage("server/discover: the result is not an object")
        supported = data.get("supportedVersions") or []
        version = self._builder.version
        if version not in supported:
            raise PeerError(
                UNSUPPORTED_PROTOCOL_VERSION, f"the server does not support {version}", data
            )
        meta = data.get("_meta") or {}
        info = meta.get(META_SERVER_INFO) if isinstance(meta, dict) else None
        self.description = ServerDescription(
            protocol_version=version,
            capabilities=data.get("capabilities") or {},
            server_info=msgspec.convert(info, Implementation) if isinstance(info, dict) else None,
            instructions=data.get("instructions"),
            supported_versions=list(supported),
        )
        return self.description

    async def initialize(self) -> None:
        """``initialize`` then ``notifications/initialized``: a new handshake-era session."""
        builder = self._builder
        params: dict[str, Any] = {
            "protocolVersion": self.handshake_version,
            "capabilities": builder.capabilities,
            "clientInfo": msgspec.to_builtins(builder.client_info),
        }
        raw = await self._caller.raw(INITIALIZE, params, modern=False, repeatable=True, early=True)
        description = decode_as(raw, ServerDescription, INITIALIZE)
        if description.protocol_version not in HANDSHAKE_VERSIONS:
            raise ClientError(
                f"the server chose protocol version {description.protocol_version!r}, "
                f"which this client does not speak"
            )
        self.description = description
        link = self._conversation.link
        await self._conversation.send(builder.initialized())
        negotiated = getattr(link, "negotiated", None)
        if negotiated is not None:
            await negotiated(description.protocol_version)

    async def after_reconnect(self) -> None:
        """A new link: the handshake era needs a new session (and its state)."""
        if self._caller.era == "handshake":
            await self.initialize()
            await self.renew()

    async def reinitialize(self) -> None:
        """Open a new handshake-era session (the HTTP link calls this on a 404, once)."""
        self.reinitializations += 1
        log.warning("the server lost our session: re-initializing")
        await self.initialize()
        self._nursery.start_soon(self.renew)

    async def renew(self) -> None:
        """A new handshake-era session knows nothing of the old one: set the log level and
        subscribe to the resources again."""
        try:
            level = self._builder.log_level
            if level is not None:
                await self._caller.raw(LOGGING_SET_LEVEL, {"level": level}, early=True)
            for uri in list(self.subscriptions):
                await self._caller.raw(RESOURCES_SUBSCRIBE, {"uri": uri}, early=True)
                log.info("subscribed again to %s on the new session", uri)
        except ClientError as exc:
            log.warning("could not renew the session's subscriptions: %s", loggable(exc))

    async def subscribe(self, uri: str) -> None:
        """Handshake era ``resources/subscribe``, kept for the session's renewal (held once
        per caller: the last :meth:`unsubscribe` ends it)."""
        await self._caller.raw(RESOURCES_SUBSCRIBE, {"uri": uri})
        self.subscriptions[uri] = self.subscriptions.get(uri, 0) + 1

    async def unsubscribe(self, uri: str) -> None:
        held = self.subscriptions.get(uri, 0)
        if held > 1:
            self.subscriptions[uri] = held - 1
            return  # another listener still watches it
        self.subscriptions.pop(uri, None)
        await self._caller.raw(RESOURCES_UNSUBSCRIBE, {"uri": uri})
