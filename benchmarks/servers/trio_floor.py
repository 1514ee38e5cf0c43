"""trio alone: one task per keep-alive connection answering fixed bytes, no HTTP parsing.

    python trio_floor.py PORT

What a request costs before any HTTP or MCP work: trio waking the connection's task
(``wait_readable``), one ``read`` and one ``write`` system call. Requests are only
delimited (end of head, ``Content-Length``), never parsed. ``python -m
benchmarks.http_floor`` sets it beside this runtime's HTTP layer and the whole request.
"""

import os
import sys

import trio

BODY = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello, benchmark"}]}}'
REPLY = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%b" % (
    len(BODY),
    BODY,
)


def _answers(buffer: bytearray) -> int:
    """How many whole requests ``buffer`` holds (removed from it)."""
    count = 0
    while (end := buffer.find(b"\r\n\r\n")) >= 0:
        start = buffer.find(b"Content-Length: ", 0, end)
        length = int(buffer[start + 16 : buffer.find(b"\r\n", start)]) if start >= 0 else 0
        if len(buffer) < end + 4 + length:
            break
        del buffer[: end + 4 + length]
        count += 1
    return count


async def connection(stream: trio.SocketStream) -> None:
    fd = stream.socket.fileno()
    buffer = bytearray()
    async with stream:
        while True:
            await trio.lowlevel.wait_readable(fd)
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                continue
            if not data:
                return
            buffer += data
            count = _answers(buffer)
            if count:
                await _write(fd, REPLY * count)


async def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            await trio.lowlevel.wait_writable(fd)


async def main(port: int) -> None:
    await trio.serve_tcp(connection, port, host="127.0.0.1")


if __name__ == "__main__":
    trio.run(main, int(sys.argv[1]))
