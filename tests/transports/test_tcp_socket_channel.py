"""FramedChannel.over_socket: a TCP connection's descriptor read and written directly (FdIO),
as ``serve_tcp``/``serve_unix`` use it, over real 127.0.0.1 sockets; and an idle FdIO read
keeps nothing alive but its wait (issue 22 item 4)."""

from __future__ import annotations

import gc
import os
import socket

import pytest
import trio

from runtime.transports import FramedChannel, _fdio, make_framer


async def _pair() -> tuple[trio.SocketStream, socket.socket]:
    """A server-side trio SocketStream and a blocking stdlib client socket, connected."""
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    listener = listeners[0]
    port = listener.socket.getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port), timeout=5)
    server = await listener.accept()
    await listener.aclose()
    return server, client


async def test_frames_both_ways_eof_and_close_over_a_real_tcp_socket() -> None:
    stream, client = await _pair()
    channel = FramedChannel.over_socket(stream, make_framer("ndjson", 1 << 20))
    try:
        assert stream.socket.fileno() == -1  # detached: the channel owns the descriptor
        with trio.fail_after(5):
            client.sendall(b'{"a":1}\n{"b":2}\n')
            assert await channel.receive() == b'{"a":1}'
            assert channel.ready_frame() == b'{"b":2}'
            assert channel.ready_frame() is None
            # A reply that fits the socket buffer goes out without waiting.
            assert channel.send_now([(b'{"ok":true}', None)]) is None
            assert client.recv(100) == b'{"ok":true}\n'
            await channel.send([(b'{"x":1}', None), (b'{"y":2}', None)])
            assert client.recv(100) == b'{"x":1}\n{"y":2}\n'
            client.shutdown(socket.SHUT_WR)
            with pytest.raises(trio.EndOfChannel):
                await channel.receive()
    finally:
        await channel.aclose()
    assert client.recv(100) == b""  # the channel's close closed the connection
    client.close()


async def test_a_closed_peer_breaks_the_write_as_a_trio_error() -> None:
    stream, client = await _pair()
    channel = FramedChannel.over_socket(stream, make_framer("ndjson", 1 << 20))
    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    client.close()  # linger 0: a reset
    try:
        with trio.fail_after(5), pytest.raises(trio.BrokenResourceError):
            for _ in range(100):
                await channel.send([(b"x" * 65536, None)])
                await trio.sleep(0.01)
    finally:
        await channel.aclose()


async def test_a_big_frame_from_a_socket_is_read_in_big_pieces(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Unlike a pipe (64 KiB per read), a socket keeps the 1 MiB reads for a big frame."""
    asked: list[int] = []
    real_read = os.read

    def read(fd: int, size: int) -> bytes:
        asked.append(size)
        return real_read(fd, size)

    monkeypatch.setattr(_fdio.os, "read", read)
    stream, client = await _pair()
    channel = FramedChannel.over_socket(stream, make_framer("ndjson", 8 << 20))
    payload = b'{"data":"' + b"x" * (4 << 20) + b'"}\n'
    try:
        with trio.fail_after(20):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(trio.to_thread.run_sync, client.sendall, payload)
                frame = await channel.receive()
    finally:
        await channel.aclose()
        client.close()
    assert frame == payload[:-1]
    assert max(asked) == 1 << 20


async def test_an_idle_read_holds_no_exception_while_it_waits() -> None:
    """The BlockingIOError of the read that found nothing is gone before the wait (inside
    the ``except`` it would live, with its traceback, as long as the connection is idle)."""
    r, w = os.pipe()
    stream = _fdio.FdIO(r)
    got: list[bytes] = []
    try:
        with trio.fail_after(5):
            async with trio.open_nursery() as nursery:

                async def read() -> None:
                    got.append(await stream.receive_some())

                nursery.start_soon(read)
                await trio.testing.wait_all_tasks_blocked()
                gc.collect()
                alive = [o for o in gc.get_objects() if isinstance(o, BlockingIOError)]
                assert alive == []
                os.write(w, b"late")
    finally:
        os.close(w)
        await stream.aclose()
    assert got == [b"late"]
