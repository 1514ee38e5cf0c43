"""FdIO (stdio's descriptors) over real pipes and files: direct reads and writes, a full
pipe finished by ``write_rest``, fairness, EOF, and the framed channel's ``send_now``."""

from __future__ import annotations

import os
import tempfile

import pytest
import trio

from runtime.framing import NdjsonFramer
from runtime.transports import FramedChannel
from runtime.transports._fdio import FdIO


def _pipe() -> tuple[int, int]:
    r, w = os.pipe()
    return r, w


async def test_reads_what_is_there_and_waits_for_more() -> None:
    r, w = _pipe()
    stream = FdIO(r)
    try:
        os.write(w, b"abc")
        with trio.fail_after(5):
            assert await stream.receive_some() == b"abc"

            async def later() -> None:
                await trio.sleep(0.05)
                os.write(w, b"def")

            async with trio.open_nursery() as nursery:
                nursery.start_soon(later)
                assert await stream.receive_some() == b"def"
            os.close(w)
            w = -1
            assert await stream.receive_some() == b""  # EOF
    finally:
        await stream.aclose()
        if w >= 0:
            os.close(w)


async def test_a_read_that_did_not_wait_still_lets_other_tasks_run() -> None:
    r, w = _pipe()
    stream = FdIO(r)
    steps = 0

    async def other() -> None:
        nonlocal steps
        while True:
            steps += 1
            await trio.lowlevel.checkpoint()

    try:
        os.write(w, b"x" * 200)
        with trio.fail_after(5):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(other)
                for _ in range(200):  # every read finds its byte there: none waits
                    assert await stream.receive_some(1) == b"x"
                # trio orders each batch of runnable tasks at random: over 200 yields the
                # other task runs (it would never run if a read that did not wait did not yield)
                assert steps > 0
                nursery.cancel_scope.cancel()
    finally:
        await stream.aclose()
        os.close(w)


async def test_write_now_fills_the_pipe_and_write_rest_finishes() -> None:
    r, w = _pipe()
    stream = FdIO(w)
    data = os.urandom(1024 * 1024)  # far more than a pipe holds
    try:
        rest = stream.write_now(data)
        assert rest is not None and 0 < len(rest) < len(data)
        got = bytearray()
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(stream.write_rest, rest)
                os.set_blocking(r, False)
                while len(got) < len(data):
                    await trio.lowlevel.wait_readable(r)
                    got += os.read(r, 1 << 16)
        assert bytes(got) == data
        assert stream.write_now(b"small") is None
        assert os.read(r, 100) == b"small"
    finally:
        await stream.aclose()
        os.close(r)


async def test_a_regular_file_is_read_without_waiting() -> None:
    with tempfile.TemporaryFile() as f:
        f.write(b'{"a":1}\n')
        f.flush()
        f.seek(0)
        stream = FdIO(os.dup(f.fileno()))
        with trio.fail_after(5):
            assert await stream.receive_some() == b'{"a":1}\n'
            assert await stream.receive_some() == b""
        await stream.aclose()


async def test_closed_stream_and_broken_pipe_raise_trio_errors() -> None:
    r, w = _pipe()
    writer = FdIO(w)
    os.close(r)
    with pytest.raises(trio.BrokenResourceError):
        writer.write_now(b"nobody reads")
    await writer.aclose()
    with pytest.raises(trio.ClosedResourceError):
        writer.write_now(b"x")
    r2, w2 = _pipe()
    reader = FdIO(r2)
    await reader.aclose()
    with pytest.raises(trio.ClosedResourceError):
        await reader.receive_some()
    os.close(w2)


async def test_framed_channel_send_now_writes_at_once_or_returns_the_rest() -> None:
    r, w = _pipe()
    channel = FramedChannel(FdIO(r), FdIO(w), NdjsonFramer())
    try:
        assert channel.send_now([(b'{"id":1}', 1), (b'{"id":2}', 2)]) is None
        assert os.read(r, 100) == b'{"id":1}\n{"id":2}\n'
        big = b'"' + b"x" * (1024 * 1024) + b'"'
        pending = channel.send_now([(big, None)])
        assert pending is not None
        got = bytearray()
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_await, pending)
                while len(got) < len(big) + 1:
                    await trio.lowlevel.wait_readable(r)
                    got += os.read(r, 1 << 16)
        assert bytes(got) == big + b"\n"
    finally:
        await channel.aclose()


async def _await(pending: object) -> None:
    await pending  # type: ignore[misc]
