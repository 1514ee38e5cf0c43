"""The SSE streams of the Streamable HTTP link, read event by event: sans-IO, like the
framers under it (bytes in, messages out; the link does the I/O and the retries).

One :class:`EventReading` follows everything that answers one request: its POST's SSE
stream and, after a cut, the GET streams that resume it (2025-11-25 basic/transports,
"Resumability and Redelivery"); or the session's standing GET stream. It keeps what the
link needs to go on after a cut (the last event id, the server's ``retry:`` hint) and
decides, per event, what to deliver:

- a priming event (an id and no data), and any event whose type is not ``message``: not
  delivered, though its id and ``retry:`` count;
- an event already delivered (its id is in the link's :class:`SeenIds`: a replay after a
  resume): not delivered again;
- an event the client cannot take (over ``max_message_size``, or a message it cannot read:
  not JSON, nested deeper than the decoder follows, not JSON-RPC 2.0): skipped, and why is
  kept in ``skipped``, since it may have been the answer (the link then fails the request
  with it rather than retrying, which would bring it back);
- any other message: delivered, and the request ids it answers leave ``awaiting``.

Nothing here raises for anything the server sends.
"""

from __future__ import annotations

import collections
from typing import Any, Final

import msgspec

from ..framing import FramingError, SSEDecoder
from ..protocol import Envelope, JSONRPCError, decode_messages

__all__ = ["SEEN_IDS", "EventReading", "SeenIds"]

#: Event ids remembered for de-duplication of replayed events (per session).
SEEN_IDS: Final = 4096


class SeenIds:
    """The last :data:`SEEN_IDS` event ids delivered on a session (ids are unique within a
    session only, 2025-11-25 "Resumability": forget them with the session)."""

    def __init__(self, size: int = SEEN_IDS) -> None:
        self._ids: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._size = size

    def add(self, event_id: str) -> bool:
        """Remember ``event_id``; False when it was delivered already."""
        if event_id in self._ids:
            return False
        self._ids[event_id] = None
        if len(self._ids) > self._size:
            self._ids.popitem(last=False)
        return True

    def clear(self) -> None:
        self._ids.clear()


def answered(data: bytes, awaiting: set[Any]) -> set[Any] | str:
    """The request ids among ``awaiting`` that the message ``data`` answers, or why it
    cannot be read (``runtime.protocol``'s rules, as every message from the server)."""
    found: set[Any] = set()
    for item in decode_messages(data):
        if isinstance(item, JSONRPCError):
            return item.message
        if isinstance(item, Envelope) and item.method is msgspec.UNSET and item.id in awaiting:
            found.add(item.id)
    return found


class EventReading:
    """The SSE streams answering one request (``awaiting``: its ids, emptied as answers
    arrive), or the standing stream (``awaiting`` None: it answers no request, so its
    messages all go on to the client, which drops what it cannot read; an oversized event
    is skipped and counted). Call :meth:`begin` for each new response, :meth:`feed` with
    its body bytes (``b""`` at its end), then :meth:`next_message` until None."""

    def __init__(self, max_message_size: int, seen: SeenIds, awaiting: set[Any] | None) -> None:
        self.max_message_size = max_message_size
        self.seen = seen
        self.awaiting = awaiting
        #: The id of the last event read (what a resume asks to start after).
        self.last_id: str | None = None
        #: The server's ``retry:`` hint, seconds.
        self.retry: float | None = None
        #: Messages delivered, events skipped, and why the last one was.
        self.delivered = 0
        self.skips = 0
        self.skipped: str | None = None
        self.last_delivered_id: str | None = None
        self._decoder = SSEDecoder(max_frame_size=max_message_size)

    def begin(self) -> None:
        """A new response starts (a resume's GET): its own framing, the same history."""
        self._decoder = SSEDecoder(max_frame_size=self.max_message_size)

    def feed(self, data: bytes) -> None:
        self._decoder.feed(data)

    def next_message(self) -> bytes | None:
        """The next message to deliver, or None when the bytes fed so far hold no more."""
        decoder = self._decoder
        while True:
            try:
                event = decoder.next_event()
            except FramingError:  # an oversized event: the decoder skipped it
                self._skip(
                    f"an event larger than the client's max_message_size "
                    f"({self.max_message_size} bytes)"
                )
                continue
            if event is None:
                return None
            if decoder.retry is not None:
                self.retry = decoder.retry / 1000
            self.last_delivered_id = None
            if event.id:
                self.last_id = event.id
                if not self.seen.add(event.id):
                    continue  # a replayed event already delivered
            if not event.data or event.event != "message":
                continue  # a priming event, or one that is not a message
            data = event.data.encode("utf-8")
            if self.awaiting is not None:
                found = answered(data, self.awaiting)
                if isinstance(found, str):
                    self._skip(f"a message it cannot read: {found}")
                    continue
                self.awaiting.difference_update(found)
            self.delivered += 1
            self.last_delivered_id = event.id or None
            return data

    def _skip(self, reason: str) -> None:
        self.skips += 1
        self.skipped = reason
