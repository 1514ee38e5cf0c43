"""What ``mcp-runtime dev`` answers while no version of the server can (the last one
crashed, or none loaded): 503 at once, with a JSON-RPC error naming why.

Without it a client's connection waits in the listening socket's backlog, which the
supervisor holds for its whole life, and hangs. The answer carries the request's id when
the body is a request whose id can be read (a JSON-RPC client matches the error to its
call), else id null; ``Connection: close`` ends each exchange. The supervisor cancels this
as soon as a new version accepts on the same socket; a connection cut by that cancel is
retried by its client and meets the new version.
"""

from __future__ import annotations

import re
import socket
from typing import Final

import msgspec
import trio

from ..protocol import INTERNAL_ERROR, encode_error

__all__ = ["serve_down"]

#: Bytes of a request head read to find its body (the server's own
#: ``HttpLimits.max_header_size``).
HEAD_LIMIT: Final = 16 * 1024
#: Bytes of a body read to find the request's id; a longer one is answered with id null.
BODY_LIMIT: Final = 1024 * 1024
#: Seconds a peer gets to send its request, and then to take the answer.
EXCHANGE_TIMEOUT: Final = 5.0
#: Bytes read (and dropped) after the answer, before closing: unread input at close makes
#: the kernel send RST, which can destroy the answer before the peer reads it.
DRAIN_LIMIT: Final = 4 * 1024 * 1024

_CONTENT_LENGTH: Final = re.compile(rb"\r\ncontent-length:[ \t]*([0-9]{1,9})[ \t]*\r\n", re.I)


class _Probe(msgspec.Struct):
    id: int | str | None = None


_probe: Final = msgspec.json.Decoder(_Probe)


async def serve_down(
    sock: socket.socket,
    message: str,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Answer every connection accepted on ``sock`` (the supervisor's listening socket,
    shared with the versions it starts; not closed here) with 503 and ``message``, until
    cancelled."""
    listener = trio.SocketListener(trio.socket.from_stdlib_socket(sock.dup()))
    async with listener, trio.open_nursery() as nursery:
        task_status.started()
        while True:
            stream = await listener.accept()
            nursery.start_soon(_answer, stream, message)


async def _answer(stream: trio.SocketStream, message: str) -> None:
    async with stream:
        request_id: int | str | None = None
        with trio.move_on_after(EXCHANGE_TIMEOUT):
            request_id = await _read_request_id(stream)
        body = bytes(encode_error(request_id, INTERNAL_ERROR, message))
        head = (
            b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
            b"content-length: %d\r\nconnection: close\r\n\r\n" % len(body)
        )
        with trio.move_on_after(EXCHANGE_TIMEOUT):
            try:
                await stream.send_all(head + body)
                await stream.send_eof()
                drained = 0
                while drained < DRAIN_LIMIT and (data := await stream.receive_some(65536)):
                    drained += len(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass  # the peer left: nothing to tell it


async def _read_request_id(stream: trio.SocketStream) -> int | str | None:
    """The id of the JSON-RPC request the peer POSTs, when one can be read; else None."""
    data = b""
    while (end := data.find(b"\r\n\r\n")) < 0:
        if len(data) > HEAD_LIMIT:
            return None
        chunk = await stream.receive_some(65536)
        if not chunk:
            return None
        data += chunk
    found = _CONTENT_LENGTH.search(data, 0, end + 2)
    if found is None or int(found[1]) > BODY_LIMIT:
        return None
    size = int(found[1])
    body = data[end + 4 :]
    while len(body) < size:
        chunk = await stream.receive_some(65536)
        if not chunk:
            return None
        body += chunk
    try:
        return _probe.decode(body[:size]).id
    except msgspec.DecodeError:  # not JSON, not an object, a batch, an odd id
        return None
