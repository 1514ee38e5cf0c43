"""The shared send low-water mark (runtime.transports.LowWater, issue 22 target 2): lifted
only for the rest of a write over LIFT_OVER on a TCP socket that has a mark, put back after
(cancelled included), never on a Unix socket."""

from __future__ import annotations

import socket

import pytest
import trio

from runtime.transports import LIFT_OVER, LowWater, lifted

LOW_WATER = socket.TCP_NOTSENT_LOWAT
TRIO_LOW_WATER = 1 << 14


async def _tcp_pair() -> tuple[trio.SocketStream, trio.SocketStream]:
    listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
    client = await trio.open_tcp_stream(*listener.socket.getsockname()[:2])
    server = await listener.accept()
    await listener.aclose()
    return server, client


async def test_lifted_only_over_lift_over_and_put_back() -> None:
    with trio.fail_after(5):
        server, client = await _tcp_pair()
        async with server, client:
            sock = server.socket
            mark = LowWater(sock)
            assert not mark.lift(LIFT_OVER)  # a small write keeps trio's pace
            assert sock.getsockopt(socket.IPPROTO_TCP, LOW_WATER) == TRIO_LOW_WATER
            assert mark.lift(LIFT_OVER + 1)
            assert mark.lifted
            assert sock.getsockopt(socket.IPPROTO_TCP, LOW_WATER) == 0
            mark.put_back()
            assert not mark.lifted
            assert sock.getsockopt(socket.IPPROTO_TCP, LOW_WATER) == TRIO_LOW_WATER
            # A closed socket's number may be another's: only the lift is forgotten.
            assert mark.lift(LIFT_OVER + 1)
            mark.put_back(closed=True)
            assert not mark.lifted
            assert sock.getsockopt(socket.IPPROTO_TCP, LOW_WATER) == 0


async def test_the_lifted_context_puts_the_mark_back_when_cancelled() -> None:
    with trio.fail_after(5):
        server, client = await _tcp_pair()
        async with server, client:
            sock = server.socket
            with trio.move_on_after(0.05) as scope, lifted(sock, 2 * LIFT_OVER):
                assert sock.getsockopt(socket.IPPROTO_TCP, LOW_WATER) == 0
                await trio.sleep_forever()
            assert scope.cancelled_caught
            assert sock.getsockopt(socket.IPPROTO_TCP, LOW_WATER) == TRIO_LOW_WATER
            with lifted(sock, LIFT_OVER):  # small: trio's pace
                assert sock.getsockopt(socket.IPPROTO_TCP, LOW_WATER) == TRIO_LOW_WATER
            with lifted(None, 10 * LIFT_OVER):  # no socket (a pipe): nothing to lift
                pass


def test_a_unix_socket_is_never_lifted() -> None:
    left, right = socket.socketpair(socket.AF_UNIX)
    with left, right:
        mark = LowWater(left)
        assert not mark.lift(10 * LIFT_OVER)
        assert not mark.lifted
        mark.put_back()


@pytest.mark.parametrize("size", [0, LIFT_OVER])
def test_small_writes_never_touch_the_socket(size: int) -> None:
    class Untouchable:
        def getsockopt(self, level: int, option: int, /) -> int:
            raise AssertionError("read the mark for a small write")

        def setsockopt(self, level: int, option: int, value: int, /) -> None:
            raise AssertionError("set the mark for a small write")

    assert not LowWater(Untouchable()).lift(size)
