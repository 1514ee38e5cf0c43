"""The seam between transports and the connection supervisor."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ..protocol import DecodedFrame

__all__ = ["MessageChannel", "Outgoing"]

#: One outgoing message and the id of the request it belongs to: a response's own id, the
#: request a progress/log notification or server-to-client request was sent from, or None
#: for messages that belong to no request. Stream transports ignore the second item; HTTP
#: uses it to pick the response stream.
Outgoing = tuple[bytes, "int | str | float | None"]


class MessageChannel(Protocol):
    """A bidirectional channel of whole, unframed JSON-RPC messages (bytes).

    Every transport ends as one of these; the supervisor drives it the same way everywhere.

    ``receive`` returns the next message: its bytes, or a ``runtime.protocol.DecodedFrame``
    when the transport has decoded and judged it already (the reader then neither decodes
    nor judges it again). It raises ``trio.EndOfChannel`` at a clean end of input,
    ``runtime.framing.FramingError`` for a bad frame (when ``fatal`` is False the
    channel has skipped it and ``receive`` may be called again), ``trio.TooSlowError`` when
    a read or idle timeout closed the connection (its message says which), and
    ``trio.BrokenResourceError`` when the peer vanished.

    ``send`` writes one or more messages (see ``Outgoing``) in order, framed and coalesced
    into as few writes as the transport allows. ``aclose`` releases the underlying stream.

    Optionally, ``send_now(messages)`` writes what the transport takes without waiting and
    returns None when that was everything, else an awaitable that writes the rest (the
    outbox awaits it under its write-timeout scope): a write that fits then costs no scope
    and no scheduler pass (stdio).

    Optionally, ``ready(related)`` says whether a message sent now (``related``: as for
    ``send``) would reach the peer's socket at once rather than wait in a queue of the
    channel's own (HTTP streams queue behind a response that is still being written):
    ``Outbox.send_nowait`` declines when it would not, so a publisher's changes coalesce
    instead of piling up behind a slow reader.

    Optionally, ``receive_nowait()`` returns the next message without waiting (raising
    ``trio.WouldBlock`` when there is none, and what ``receive`` raises otherwise); with it
    the channel is read only while it has input, and must have ``wake()`` too. Then
    ``Connection.serve`` runs in rounds: a round ends once nothing is left to read and
    nothing runs in its nursery (an idle connection holds no task, nursery or cancel
    scope), and ``serve`` returns with the connection alive (``ended`` False).
    Whoever feeds the channel calls ``Connection.resume()`` after; when the connection needs
    a round and none is serving (input, ``start_soon``, shutdown, its end), it calls the
    channel's ``wake()``, whose owner then calls ``serve()`` again, from a task of its own.

    Optionally, ``refuses_duplicate_ids`` True says that the transport refuses a request
    whose id is in flight itself, before the message reaches the channel, over a span at
    least as long as the connection's (an HTTP session: until the POST carrying it is
    answered); the connection's request table then does not judge ids again.
    """

    async def receive(self) -> bytes | DecodedFrame: ...

    async def send(self, messages: Sequence[Outgoing]) -> None: ...

    async def aclose(self) -> None: ...
