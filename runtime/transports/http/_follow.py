"""A POST's response stream resumed on a replica that does not produce it.

MCP 2025-11-25 basic/transports, "Resumability and Redelivery": a client that lost a POST's
SSE stream resumes it with ``GET`` and ``Last-Event-ID``; behind a balancer that GET lands on
any replica, often not the one running the request (which may also have died). The replica
that runs it keeps the stream's events in the shared store, with the requests the stream
answers and a lease that it renews every third of ``Store.lease`` (``HttpSession.prime``,
``SessionRegistry.renew_leases``). The resumed response follows the store:

- it writes the stream's stored events after the client's, then polls for more every
  ``FOLLOW_POLL`` seconds (one round trip each, ``EventStore.follow``), with a keep-alive
  comment on quiet periods, and ends once every request of the stream is answered;
- when the lease runs out first, the producer is gone (killed, or cut off from the store for
  a whole lease) and no answer will come: each request still unanswered gets a -32603 error
  (``replica_gone``), stored as the stream's next event (a later resume replays it) and
  written, and the stream ends. The client hears within a lease and a poll of the death,
  instead of resuming for ever (an empty stream, ``retry``, the same again);
- when the store fails meanwhile, the response ends: the client resumes from its last event
  (``503`` + ``Retry-After`` while the store is away).
"""

from __future__ import annotations

import logging
from typing import Any, Final

import msgspec
import trio

from ...framing import encode_sse_comment
from ...protocol import error_reply, id_key, probe, replica_gone
from ...stores import StoreUnavailable, StreamState
from ._exchange import Exchange
from ._in_order import seq_of
from ._session import HttpSession
from ._streams import Key, sse_event

__all__ = ["FOLLOW_POLL", "follow"]

log = logging.getLogger("mcp_runtime.http")

#: Seconds between two reads of a followed stream from the store: its events reach the
#: client this much later than from the replica producing it (a resumed stream only).
FOLLOW_POLL: Final = 0.5


def _requests(raw: bytes | None) -> dict[Key, Any] | None:
    """The request ids a stream answers (by ``id_key``), or None when none are recorded."""
    if raw is None:
        return None
    try:
        ids = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return None
    if not isinstance(ids, list):
        return None
    return {id_key(i): i for i in ids if isinstance(i, (str, int)) and not isinstance(i, bool)}


def _answered(pending: dict[Key, Any], data: bytes) -> None:
    """Take the requests that ``data`` (an event of the stream) answers out of ``pending``."""
    is_response, request_id = probe(data)
    if not is_response:
        return
    if data[:1] == b"[":  # a batch reply answers every request of its POST
        pending.clear()
    elif request_id is not None:
        pending.pop(id_key(request_id), None)


async def follow(
    exchange: Exchange,
    session: HttpSession,
    stream_id: str,
    state: StreamState,
    after: int,
    keepalive: float,
) -> bool:
    """Write ``state``'s events on the started SSE response, then follow the stream (see the
    module docstring) until it is answered, its producer is gone, or the store fails: True
    then (end the response); False when the client hung up."""
    pending = _requests(state.requests)
    store = session.store
    written_at = trio.current_time()
    with trio.CancelScope() as scope:
        exchange.cancel_on_disconnect(scope)
        try:
            while True:
                for event_id, data in state.events:
                    await exchange.write(sse_event(data, event_id))
                    after = max(after, seq_of(event_id))
                    if pending is not None:
                        _answered(pending, data)
                if state.events:
                    written_at = trio.current_time()
                if not pending:  # answered, or nothing recorded to wait for
                    return True
                if not state.held:
                    await _gone(exchange, session, stream_id, pending)
                    return True
                await trio.sleep(FOLLOW_POLL)
                if trio.current_time() - written_at >= keepalive:
                    await exchange.write(encode_sse_comment("keep-alive"))
                    written_at = trio.current_time()
                try:
                    found = await store.follow(session.id, stream_id, after)
                except StoreUnavailable as exc:
                    log.warning(
                        "followed stream ended (store unavailable) session=%s stream=%s: %s",
                        session.id[:8],
                        stream_id,
                        exc,
                    )
                    return True
                if found is None:  # the session's events are gone (it ended)
                    return True
                state = found
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return False
        finally:
            exchange.forget(scope)
    return False  # (cancelled: the client hung up)


async def _gone(
    exchange: Exchange, session: HttpSession, stream_id: str, pending: dict[Key, Any]
) -> None:
    """The producer's lease ran out with ``pending`` unanswered: answer each with an error,
    stored first (so that a client resuming again, anywhere, replays it)."""
    log.warning(
        "stream producer gone (lease expired) session=%s stream=%s requests=%d",
        session.id[:8],
        stream_id,
        len(pending),
    )
    for request_id in pending.values():
        reply = bytes(error_reply(replica_gone("request"), request_id))
        event_id: str | None = None
        try:
            event_id = await session.store.append(session.id, stream_id, reply)
        except StoreUnavailable as exc:
            log.warning("event not stored session=%s: %s", session.id[:8], exc)
        await exchange.write(sse_event(reply, event_id))
