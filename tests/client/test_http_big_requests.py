"""A big HTTP request from the client (a tools/call with big arguments; issue 22 target 2):
sent with the socket's send low-water mark lifted (runtime/transports/_low_water.py), put
back after it; a small request keeps trio's pace. Over a real 127.0.0.1 socket to a server
that reads nothing for a while."""

from __future__ import annotations

import socket
from typing import Any

import pytest
import trio
import trio._socket

from runtime.client._http import HttpPool, Url

LOW_WATER = socket.TCP_NOTSENT_LOWAT
TRIO_LOW_WATER = 1 << 14


async def _slow_server(
    listener: trio.SocketListener, bodies: list[int], *, task_status: Any
) -> None:
    """Accept one connection; per request wait 0.2 s (the client's send waits), then read
    the head and body and answer 200 with no body."""
    task_status.started()
    stream = await listener.accept()
    async with stream:
        buffer = b""
        while True:
            await trio.sleep(0.2)
            while b"\r\n\r\n" not in buffer:
                more = await stream.receive_some(1 << 16)
                if not more:
                    return
                buffer += more
            head, _, buffer = buffer.partition(b"\r\n\r\n")
            length = next(
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            while len(buffer) < length:
                buffer += await stream.receive_some(1 << 20)
            bodies.append(length)
            buffer = buffer[length:]
            await stream.send_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")


async def test_a_big_request_goes_out_lifted_and_a_small_one_at_trios_pace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    marks: list[tuple[int, int]] = []  # (bytes offered, the socket's mark at that send)
    real_send = trio._socket._SocketType.send

    async def send(self: Any, data: Any, flags: int = 0) -> int:
        marks.append((len(data), self.getsockopt(socket.IPPROTO_TCP, LOW_WATER)))
        sent: int = await real_send(self, data, flags)
        return sent

    monkeypatch.setattr(trio._socket._SocketType, "send", send)
    listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
    port = listener.socket.getsockname()[1]
    bodies: list[int] = []
    big = b"b" * (3 << 20)
    with trio.fail_after(20):
        async with listener, trio.open_nursery() as nursery:
            await nursery.start(_slow_server, listener, bodies)
            pool = HttpPool()
            url = Url.parse(f"http://127.0.0.1:{port}/mcp")
            response = await pool.exchange(url, "POST", [("Content-Type", "text/plain")], big)
            assert response.status == 200
            await response.aclose()
            big_sends = [mark for size, mark in marks if size > 64 * 1024]
            assert big_sends and set(big_sends) == {0}, big_sends  # lifted for all of it
            marks.clear()
            response = await pool.exchange(url, "POST", [("Content-Type", "text/plain")], b"s")
            await response.aclose()
            # Put back; the small request (and the server's answer) at trio's pace.
            assert marks and {mark for _, mark in marks} == {TRIO_LOW_WATER}, marks
            await pool.aclose()
            nursery.cancel_scope.cancel()
    assert bodies == [len(big), 1]
