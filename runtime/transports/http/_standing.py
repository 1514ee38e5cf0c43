"""A handshake-era session's GET: its standing SSE stream, or a stream resumed.

GET without ``Last-Event-ID`` opens the session's one standing stream, where the server
sends what relates to no request (2025-11-25 basic/transports, "Listening for Messages from
the Server"); with it, the stream that event belongs to is replayed from after it, then
followed live (there, "Resumability and Redelivery"): a POST's stream this replica holds, or,
over a shared store, one another replica produces (``_follow``). Event ids only grow on a
stream, whichever replica wrote its events (``_in_order``).
"""

from __future__ import annotations

import functools
import logging
from typing import Final

import trio

from ...stores import StoreUnavailable, split_event_id
from ._edge import HttpLimits
from ._exchange import Exchange, HttpRequest, parse_accept, refusal
from ._follow import follow
from ._in_order import InOrder, seq_of
from ._session import HttpSession, store_refusal
from ._streams import ResponseStream, pump, sse_event

__all__ = ["StandingStreams"]

log = logging.getLogger("mcp_runtime.http")


class StandingStreams:
    """Serves the GETs of handshake-era sessions (``HandshakeEra.get`` finds the session)."""

    def __init__(self, limits: HttpLimits) -> None:
        self.limits = limits

    async def open(self, request: HttpRequest, exchange: Exchange, session: HttpSession) -> None:
        """Answer a GET to ``session`` (found, touched) with its standing stream, or with the
        stream ``Last-Event-ID`` names, replayed from after that event, then live."""
        if not parse_accept(request.header("accept"))[1]:
            raise refusal(406, "Not Acceptable: a GET must accept text/event-stream")
        if session.get_streams >= self.limits.max_streams_per_session:
            raise refusal(429, "Too Many Requests: too many SSE streams for this session")
        last = request.header("last-event-id")
        if last is not None:
            # (The stream an event id names: ``EventStore.replay`` reads the same prefix.)
            stream: ResponseStream | None = session.streams.get(last.rpartition("_")[0])
        else:
            stream = session.standing
            if stream.attached:
                raise refusal(409, "Conflict: this session's GET stream is already open")
        # Claimed before the first checkpoint: what another replica routes to the stream
        # from here on queues for this response (``HttpSession.on_bus`` drops it for a GET
        # stream this replica does not hold) rather than being lost while the replay is
        # read and the head and priming event go out; a replayed event that also queued is
        # skipped by its number. A client that has seen the head may cause such a message
        # at once (2025-11-25 basic/transports, "Listening for Messages from the Server"),
        # and under load it can arrive before the stream would otherwise be attached.
        claimed = stream if stream is not None and not stream.attached else None
        if claimed is not None:
            claimed.attached = True
            claimed.overflowed = False
        headers = [("Mcp-Session-Id", session.id), ("X-Accel-Buffering", "no")]
        session.get_streams += 1
        session.in_use += 1
        try:
            if last is not None and stream is None and session.holds is not None:
                # A POST stream this replica does not produce: followed in the store.
                await self._follow(exchange, session, last, headers)
                return
            replay: list[tuple[str, bytes]] = []
            skip = 0
            if last is not None:
                try:
                    found = await session.store.replay(session.id, last)
                except StoreUnavailable as exc:
                    raise store_refusal(exc) from None
                if found is None:
                    raise refusal(400, "Bad Request: unknown Last-Event-ID")
                replay = found[1]
                skip = seq_of(replay[-1][0]) if replay else seq_of(last)
            # Where the stream starts, for the order of what other replicas feed it
            # (``_in_order``; one replica's events go out as they are routed).
            after: int | None = skip
            reopened = last is None and session.standing.prime_id is not None
            if reopened:
                # Its priming event is reused, so the stream's counter says where it stands
                # (read once, as near the claim as can be: what comes after it goes out).
                shared = session.shared is not None
                after = await _last_number(session, session.standing.id) if shared else None
            await exchange.start_stream(200, "text/event-stream", headers)
            if stream is session.standing and last is None:
                prime = await session.prime(stream)
                if not reopened:
                    after = seq_of(prime) if prime is not None else None
                if not reopened and after is not None and claimed is not None:
                    # Routed here while the priming event was stored: ids below its own
                    # go out first, so ids only grow (a client resuming from the priming
                    # event misses none of them).
                    for event_id, data in claimed.take_below(after):
                        await exchange.write(sse_event(data, event_id))
                await exchange.write(sse_event(None, prime, self.limits.sse_retry_ms))
                if reopened and after is not None and claimed is not None:
                    # Routed here while the counter was read: at or below it, above the
                    # reused priming event's id (so ids only grow here too).
                    for event_id, data in claimed.take_below(after + 1):
                        await exchange.write(sse_event(data, event_id))
            else:
                await exchange.write(b"retry: %d\n\n" % self.limits.sse_retry_ms)
            for event_id, data in replay:
                await exchange.write(sse_event(data, event_id))
            order = None
            if claimed is session.standing and session.shared is not None:
                # Other replicas feed this stream through the bus (``_in_order``).
                order = InOrder(after, functools.partial(_stored_after, session, claimed.id))
            if (
                claimed is not None
                and not claimed.done
                and not await pump(exchange, claimed, self.limits.sse_keepalive, skip, order)
            ):
                return
            await exchange.end()
        finally:
            if claimed is not None:
                claimed.attached = False
                session.release(claimed)
            session.get_streams -= 1
            session.in_use -= 1
            session.touch()

    async def _follow(
        self, exchange: Exchange, session: HttpSession, last: str, headers: list[tuple[str, str]]
    ) -> None:
        """Resume, from ``last``, a shared session's POST stream that another replica
        produces (or produced): ``_follow``."""
        split = split_event_id(last)
        if split is None:
            raise refusal(400, "Bad Request: unknown Last-Event-ID")
        stream_id, after = split
        try:
            state = await session.store.follow(session.id, stream_id, after)
        except StoreUnavailable as exc:
            raise store_refusal(exc) from None
        if state is None:
            raise refusal(400, "Bad Request: unknown Last-Event-ID")
        await exchange.start_stream(200, "text/event-stream", headers)
        await exchange.write(b"retry: %d\n\n" % self.limits.sse_retry_ms)
        if await follow(exchange, session, stream_id, state, after, self.limits.sse_keepalive):
            await exchange.end()


#: The longest wait for the shared store's events in a GET stream's gap (``_in_order``).
FILL_WAIT: Final = 2.0


async def _last_number(session: HttpSession, stream_id: str) -> int | None:
    """The number of ``stream_id``'s latest id in the shared store; None when the store
    fails (the stream's first event is then its start, ``_in_order``)."""
    try:
        return await session.store.last_number(session.id, stream_id)
    except StoreUnavailable as exc:
        log.warning("GET stream start unknown session=%s: %s", session.id[:8], exc)
        return None


async def _stored_after(
    session: HttpSession, stream_id: str, after: int
) -> list[tuple[str, bytes]]:
    """The stored events of ``stream_id`` after number ``after``, in order; none when the
    store fails (the gap stays as the bus left it)."""
    with trio.move_on_after(FILL_WAIT):
        try:
            found = await session.store.replay(session.id, f"{stream_id}_{after}")
        except StoreUnavailable as exc:
            log.warning("gap not filled session=%s: %s", session.id[:8], exc)
            return []
        return found[1] if found is not None else []
    return []
