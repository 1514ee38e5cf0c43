"""FramedChannel over real trio streams: read/idle timeouts and framing errors."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest
import trio
import trio.testing

from runtime.framing import FramingError, NdjsonFramer
from runtime.transports import FramedChannel, make_framer


async def test_partial_frame_stall_hits_read_timeout() -> None:
    client, server = trio.testing.memory_stream_pair()
    channel = FramedChannel(server, server, NdjsonFramer(), read_timeout=0.1, idle_timeout=None)
    await client.send_all(b'{"jsonrpc":"2.0","method":"a"}\n{"partial')
    assert await channel.receive() == b'{"jsonrpc":"2.0","method":"a"}'
    with trio.fail_after(2), pytest.raises(trio.TooSlowError, match="read-timeout"):
        await channel.receive()


async def test_a_frame_completed_in_one_read_leaves_no_partial_deadline() -> None:
    client, server = trio.testing.memory_stream_pair()
    channel = FramedChannel(server, server, NdjsonFramer(), read_timeout=0.1, idle_timeout=None)
    await client.send_all(b'{"a":1}\n')
    assert await channel.receive() == b'{"a":1}'
    # Nothing buffered: waiting past the read timeout for the next frame is idle, not slow.
    with trio.move_on_after(0.3) as scope:
        await channel.receive()
    assert scope.cancelled_caught
    await client.send_all(b'{"b":2}\n')
    with trio.fail_after(2):
        assert await channel.receive() == b'{"b":2}'


async def test_an_over_long_line_cut_short_after_its_error_meets_the_read_timeout() -> None:
    client, server = trio.testing.memory_stream_pair()
    channel = FramedChannel(
        server, server, NdjsonFramer(max_frame_size=8), read_timeout=0.2, idle_timeout=None
    )
    await client.send_all(b'{"a":"0123456789')  # over-long, no newline yet: dropped from now on
    with trio.fail_after(2), pytest.raises(FramingError, match="exceeds"):
        await channel.receive()
    # The rest of that line never comes: a stalled frame, not an idle connection.
    with trio.fail_after(2), pytest.raises(trio.TooSlowError, match="read-timeout"):
        await channel.receive()


async def test_idle_timeout_between_frames() -> None:
    _client, server = trio.testing.memory_stream_pair()
    channel = FramedChannel(server, server, NdjsonFramer(), read_timeout=10, idle_timeout=0.1)
    with trio.fail_after(2), pytest.raises(trio.TooSlowError, match="idle-timeout"):
        await channel.receive()


async def test_eof_and_framing_errors_surface() -> None:
    client, server = trio.testing.memory_stream_pair()
    channel = FramedChannel(server, server, make_framer("content-length", 10))
    await client.send_all(
        b"Content-Length: 20\r\n\r\n" + b"x" * 20 + b"Content-Length: 2\r\n\r\n{}"
    )
    await client.send_stream.aclose()
    with pytest.raises(FramingError) as info:
        await channel.receive()
    assert not info.value.fatal
    assert await channel.receive() == b"{}"
    with pytest.raises(trio.EndOfChannel):
        await channel.receive()


async def test_send_frames_and_coalesces() -> None:
    client, server = trio.testing.memory_stream_pair()
    channel = FramedChannel(server, server, make_framer("content-length", 100))
    await channel.send([(b"{}", None), (b"[1]", 1)])
    assert await client.receive_some() == b"Content-Length: 2\r\n\r\n{}Content-Length: 3\r\n\r\n[1]"


async def test_big_messages_cross_a_real_pipe_intact() -> None:
    """A frame far over one read (sent in its parts, read in big reads) and small ones around
    it arrive whole and in order, in both framings, through an OS pipe."""
    big = b'{"text":"' + bytes(range(48, 58)) * 300_000 + b'"}'  # ~3 MiB
    for framing in ("ndjson", "content-length"):
        r1, w1 = os.pipe()
        sender = FramedChannel(
            trio.lowlevel.FdStream(os.dup(r1)), trio.lowlevel.FdStream(w1), make_framer(framing, 1)
        )
        receiver = FramedChannel(
            trio.lowlevel.FdStream(r1),
            trio.lowlevel.FdStream(os.dup(w1)),
            make_framer(framing, 4 << 20),
        )
        got: list[bytes] = []

        async def read_three(channel: FramedChannel = receiver, out: list[bytes] = got) -> None:
            for _ in range(3):
                out.append(await channel.receive())

        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(read_three)
                await sender.send([(b"{}", None)])
                await sender.send([(big, None)])
                await sender.send([(b"[1]", None)])
        assert got == [b"{}", big, b"[1]"]
        await sender.aclose()
        await receiver.aclose()


def test_unknown_framing_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown framing"):
        make_framer("xml", 10)  # type: ignore[arg-type]


async def _read_big_frame(
    big_receive_size: Callable[[int], int | None],
) -> tuple[bytes, bytes, list[int | None]]:
    """One 1 MiB NDJSON frame written into a pipe and read by a FramedChannel over it
    (``big_receive_size`` given the pipe's read end): the frame, what was written, and the
    sizes the channel asked the pipe for."""
    from runtime.transports._fdio import FdIO

    asked: list[int | None] = []

    class Counted(FdIO):
        async def receive_some(self, max_bytes: int | None = None) -> bytes:
            asked.append(max_bytes)
            return await super().receive_some(max_bytes)

    r, w = os.pipe()
    payload = b'{"data":"' + b"x" * (1 << 20) + b'"}\n'
    reader = Counted(r)
    channel = FramedChannel(
        reader, reader, make_framer("ndjson", 4 << 20), big_receive_size=big_receive_size(r)
    )
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:

            async def write() -> None:
                await trio.to_thread.run_sync(os.write, w, payload)

            nursery.start_soon(write)
            frame = await channel.receive()
    os.close(w)
    await reader.aclose()
    return frame, payload, asked


async def test_a_pipe_is_read_in_pieces_of_its_capacity_even_for_a_big_frame() -> None:
    """From a pipe (FdIO) a big frame is asked for 64 KiB at a time (what a pipe gives per
    read): a 1 MiB request size would only allocate, and page-fault, 1 MiB per read."""
    frame, payload, asked = await _read_big_frame(lambda fd: None)
    assert frame == payload[:-1]
    assert len(asked) >= 2 and set(asked) == {64 * 1024}


async def test_a_grown_pipe_is_read_in_pieces_of_its_capacity() -> None:
    """stdio grows its pipes (1 MiB) and passes the capacity as ``big_receive_size``: once
    64 KiB of a frame are in, the rest is asked for a capacity at a time, so a 1 MiB request
    takes a few reads, not 16 trips through the event loop (issue 22)."""
    import fcntl

    from runtime.transports import _stdio

    if getattr(fcntl, "F_SETPIPE_SZ", None) is None:
        pytest.skip("F_SETPIPE_SZ is Linux only; elsewhere the pipes are left as they are")
    grown: list[int | None] = []

    def grow(fd: int) -> int | None:
        capacity = _stdio._grow_pipe(fd)
        assert capacity == fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ)
        grown.append(capacity)
        return capacity

    frame, payload, asked = await _read_big_frame(grow)
    capacity = grown[0]
    assert capacity is not None
    assert frame == payload[:-1]
    assert asked[0] == 64 * 1024 and set(asked[1:]) == {max(capacity, 64 * 1024)}
    # (os.write of 1 MiB into a full pipe blocks in its thread until read, so the count of
    # reads depends on timing; their size does not)


def test_grow_pipe_is_none_for_what_is_not_a_pipe() -> None:
    from runtime.transports import _stdio

    with open(os.devnull, "rb") as f:
        assert _stdio._grow_pipe(f.fileno()) is None
