"""A big frame from the client over TCP (a tools/call with big arguments; issue 22 target 2):
sent with the socket's send low-water mark lifted (runtime/transports/_low_water.py) and put
back after it; a small frame keeps trio's pace. Over a real 127.0.0.1 socket to a peer that
reads nothing for a while, then checks every byte."""

from __future__ import annotations

import socket
from typing import Any

import pytest
import trio
import trio._socket

from runtime.client._connectors import SocketConnector
from runtime.client._link import Outgoing

LOW_WATER = socket.TCP_NOTSENT_LOWAT
TRIO_LOW_WATER = 1 << 14


async def _slow_reader(listener: trio.SocketListener, got: bytearray, *, task_status: Any) -> None:
    """Accept one connection, read nothing for 0.2 s (the client's send waits), then read
    everything until the client hangs up."""
    task_status.started()
    stream = await listener.accept()
    async with stream:
        await trio.sleep(0.2)
        while more := await stream.receive_some(1 << 20):
            got += more


async def test_a_big_frame_goes_out_lifted_and_a_small_one_at_trios_pace(
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
    big = b'{"x":"' + b"b" * (3 << 20) + b'"}'
    got = bytearray()
    with trio.fail_after(20):
        async with listener, trio.open_nursery() as nursery:
            await nursery.start(_slow_reader, listener, got)
            connector = SocketConnector(host="127.0.0.1", port=port)
            async with connector.open() as link:
                await link.send(Outgoing(big))
                big_sends = [mark for size, mark in marks if size > 64 * 1024]
                assert len(big_sends) >= 1 and set(big_sends) == {0}, marks  # lifted throughout
                marks.clear()
                await link.send(Outgoing(b'{"y":1}'))
                # Put back: the small frame at trio's pace.
                assert marks and {mark for _, mark in marks} == {TRIO_LOW_WATER}, marks
    assert bytes(got) == big + b'\n{"y":1}\n'
