"""FramedChannel over real trio streams: read/idle timeouts and framing errors."""

from __future__ import annotations

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


def test_unknown_framing_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown framing"):
        make_framer("xml", 10)  # type: ignore[arg-type]
