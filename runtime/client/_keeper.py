"""The reconnection policy: one link held open, re-opened after a loss while the policy allows.

:class:`LinkKeeper` opens the connector's link and hands it to its :class:`LinkUser` (the
conversation) to read. When the link is lost it tells the user (which fails the requests
that cannot survive the loss), then, for a connector that ``reconnects``, waits the backoff
policy's next delay (``Backoff``: exponential, full jitter, a budget) and opens a new link,
whose user first resumes (a new handshake-era session, the requests safe to repeat sent
again) before anything else may go. When the policy gives up, or the connector does not
reconnect, the keeper is dead: the user is told, once, and every later wait raises the same
:class:`TransportLost`.

A link that cannot be opened the first time fails the start at once when nothing is there
to answer (``TransportLost.refused``: a port nothing listens on, an unknown host) or the
connector does not reconnect; otherwise the first opening is retried under the policy too.
"""

from __future__ import annotations

import logging
from typing import Protocol

import trio

from ..framing import loggable
from ._backoff import Backoff, BackoffRun
from ._connectors import Connector
from ._errors import TransportLost
from ._link import Link, MessageTooLarge
from ._outgoing import Outgoing

__all__ = ["RAISED", "LinkKeeper", "LinkUser"]

log = logging.getLogger("mcp_runtime.client")
#: A log record attribute, True on the record of a failure that is also raised to the
#: requests waiting on it (``logging.LogRecord``; ``extra={RAISED: True}``).
RAISED = "mcp_runtime_raised"


class LinkUser(Protocol):
    """What the keeper drives: the reader of each link and the owner of the requests.

    ``read(link)`` reads until the link's clean end (returns) or loss (raises
    :class:`TransportLost`, nothing else); it is cancelled when the client closes.
    ``resume()`` runs in a task of its own after a reconnect, before requests may go on the
    new link, and raises nothing (a failure there is the user's to log). ``lost(reason,
    too_large=)`` is called once per lost link, before any reconnect: fail what the loss
    ends. ``ended(error)`` is called once, when no link will come again (closed or dead):
    fail everything still waiting. Neither raises."""

    async def read(self, link: Link) -> None: ...

    async def resume(self) -> None: ...

    def lost(self, reason: str, *, too_large: bool) -> None: ...

    def ended(self, error: TransportLost) -> None: ...


class LinkKeeper:
    """Holds one connector's link (see the module docstring). ``generation`` counts the
    links opened (a request remembers the one it went out on); ``connected`` is set while a
    link is up, ``ready`` while requests may go on it (after the handshake or the resume)."""

    def __init__(self, connector: Connector, backoff: Backoff, nursery: trio.Nursery) -> None:
        self.connector = connector
        self.backoff = backoff
        self._nursery = nursery
        self.link: Link | None = None
        self.generation = 0
        #: Times the link was re-opened after a loss.
        self.reconnects = 0
        self.connected = trio.Event()
        self.ready = trio.Event()
        self.dead: TransportLost | None = None
        self.closing = False
        #: Set by the client while its era probe is out on a link that does not reconnect:
        #: a loss then re-opens the link once, at once (the probe itself is not re-sent).
        self.reopen_once = False

    async def maintain(
        self, user: LinkUser, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Hold the link open for ``user`` until closed or dead. Raises :class:`TransportLost`
        only before it started (the first link could not be opened); never after."""
        started = False
        run: BackoffRun | None = None
        while True:
            try:
                async with self.connector.open() as link:
                    self._opened(link, user, resumed=run)
                    run = None
                    if not started:
                        started = True
                        task_status.started()
                    try:
                        await user.read(link)
                        # Raised inside the link's context so the connector can explain
                        # (a stdio server's exit status and last stderr lines).
                        raise TransportLost("the server closed the connection")
                    finally:
                        self.link = None
                        self.connected = trio.Event()
                        self.ready = trio.Event()
            except TransportLost as exc:
                lost = exc
                if not started and (not self.connector.reconnects or exc.refused):
                    raise
            if self.closing:
                user.ended(TransportLost("the client is closed"))
                return
            reason = str(lost)
            user.lost(reason, too_large=isinstance(lost, MessageTooLarge))
            if not self.connector.reconnects and self.reopen_once:
                self.reopen_once = False
                log.warning(
                    "%s closed during the era probe (%s): starting it once more",
                    self.connector.description,
                    loggable(reason),
                )
                continue
            if not self.connector.reconnects:
                self._die(user, lost.restated(f"{self.connector.description}: {reason}"))
                return
            if run is None:
                run = self.backoff.start(clock=trio.current_time())
                log.warning(
                    "lost %s: %s; reconnecting", self.connector.description, loggable(reason)
                )
            delay = run.next_wait(trio.current_time())
            if delay is None:
                error = TransportLost(
                    f"{self.connector.description}: gave up reconnecting after "
                    f"{run.attempts} attempt(s) in {run.elapsed:.1f} s: {reason}",
                    attempts=run.attempts,
                )
                if not started:
                    raise error
                self._die(user, error)
                return
            await trio.sleep(delay)

    def _opened(self, link: Link, user: LinkUser, resumed: BackoffRun | None) -> None:
        self.link = link
        self.generation += 1
        self.connected.set()
        if resumed is not None:
            self.reconnects += 1
            log.warning(
                "reconnected to %s after %d attempt(s) in %.3f s",
                self.connector.description,
                resumed.attempts,
                trio.current_time() - resumed.started,
            )
            self._nursery.start_soon(user.resume)

    def _die(self, user: LinkUser, error: TransportLost) -> None:
        # Also raised to every waiting request: RAISED lets a program that reports those
        # (the CLI) leave this record out rather than say the same thing twice.
        log.error("%s", loggable(error), extra={RAISED: True})
        self.dead = error
        user.ended(error)
        self.connected.set()  # wake waiters: they find the keeper dead
        self.ready.set()

    def close(self) -> None:
        """No new link: the current one closes when ``maintain`` is cancelled."""
        self.closing = True

    async def wait_usable(self, early: bool = False) -> None:
        """Wait until requests may be sent (``early``: the link is up, for the handshake
        itself); raise :class:`TransportLost` when the keeper died or closed."""
        while True:
            if self.dead is not None:
                raise self.dead.restated(str(self.dead))
            if self.closing:
                raise TransportLost("the client is closed")
            event = self.connected if early else self.ready
            if event.is_set():
                return
            await event.wait()

    async def send(self, out: Outgoing) -> None:
        """Send on the current link: :class:`TransportLost` when there is none or it broke
        (cancelling it may leave a partly written frame, which breaks the link)."""
        link = self.link
        if link is None:
            raise TransportLost(f"{self.connector.description}: not connected")
        await link.send(out)
