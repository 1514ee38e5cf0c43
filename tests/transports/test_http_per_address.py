"""One client address cannot take every connection slot, and a body trickled under a minimum
rate is cut after a grace period, not at the body's 60 s deadline.

The attack: twenty clients trickling a body at a byte every two seconds held every slot of
``--max-connections 20`` for about a minute while everyone else got 503. Here with small
limits, on loopback: 127.0.0.1 is the attacker, 127.0.0.2 (also loopback on Linux) another
client."""

from __future__ import annotations

import json
import re
import subprocess
import time

import trio

from runtime.transports import HttpLimits
from runtime.transports.http import address_key

from ..peers import ROOT, cli
from ..wire import read_head
from .app import init_body, make_app, serving

BODY = json.dumps(init_body()).encode()
HEAD = (
    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    b"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n" % len(BODY)
)


async def _answer(stream: trio.SocketStream) -> bytes:
    """Everything the server sends until it closes (or resets) the connection."""
    data = b""
    try:
        while chunk := await stream.receive_some(65536):
            data += chunk
    except trio.BrokenResourceError:
        pass
    return data


async def _trickler(address: tuple[str, int], interval: float, answers: list[bytes]) -> None:
    """Send the head, then the body a byte per ``interval``; what the server answered."""
    stream = await trio.open_tcp_stream(*address)
    async with stream, trio.open_nursery() as nursery:
        got: list[bytes] = []

        async def read() -> None:
            got.append(await _answer(stream))
            nursery.cancel_scope.cancel()

        nursery.start_soon(read)
        try:
            await stream.send_all(HEAD)
            for byte in BODY:
                await stream.send_all(bytes([byte]))
                await trio.sleep(interval)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            await trio.sleep_forever()  # (the reader ends this)
    answers.append(got[0] if got else b"")


async def _post_from(address: tuple[str, int], local: str) -> bytes:
    stream = await trio.open_tcp_stream(*address, local_address=local)
    async with stream:
        await stream.send_all(HEAD + BODY)
        head = await read_head(stream)
    assert head is not None
    return head


async def test_one_address_cannot_take_every_slot() -> None:
    app, _ = make_app()
    # Half the slots per address by default: 3 of 6.
    limits = HttpLimits(max_connections=6)
    answers: list[bytes] = []
    with trio.fail_after(15):
        async with serving(app, http_limits=limits) as address, trio.open_nursery() as nursery:
            for _ in range(6):
                nursery.start_soon(_trickler, address, 2.0, answers)
            await trio.sleep(0.5)
            # The three refused tricklers were told so, naming the limit.
            refused = [a for a in answers if a.startswith(b"HTTP/1.1 503 ")]
            assert len(refused) == 3, answers
            error = json.loads(refused[0].partition(b"\r\n\r\n")[2])["error"]
            assert error["code"] == -32010
            assert error["data"] == {"maxConnectionsPerAddress": 3}, error
            # Another address is served at once, while the tricklers hold their slots.
            started = trio.current_time()
            head = await _post_from(address, "127.0.0.2")
            assert head.startswith(b"HTTP/1.1 200 "), head
            assert trio.current_time() - started < 2
            nursery.cancel_scope.cancel()


async def test_a_body_under_the_minimum_rate_is_cut_after_the_grace() -> None:
    app, _ = make_app()
    # The body deadlines stay at their defaults (30 s between bytes, 60 s in all).
    limits = HttpLimits(min_body_rate=100, body_rate_grace=1.0)
    answers: list[bytes] = []
    with trio.fail_after(10):
        async with serving(app, http_limits=limits) as address:
            started = trio.current_time()
            await _trickler(address, 0.2, answers)  # 5 bytes/s
            elapsed = trio.current_time() - started
    assert answers[0].startswith(b"HTTP/1.1 408 "), answers
    assert b"min_body_rate" in answers[0]
    assert 0.9 < elapsed < 3.5, elapsed


async def test_a_slow_body_above_the_minimum_rate_is_read() -> None:
    """A body over a slow link (about 1.3 KB/s, for longer than the grace) is not cut."""
    app, _ = make_app()
    limits = HttpLimits(min_body_rate=500, body_rate_grace=0.5)
    padded = json.dumps({**init_body(), "pad": "x" * 1900}).encode()
    head = HEAD.replace(b"%d" % len(BODY), b"%d" % len(padded))
    with trio.fail_after(10):
        async with serving(app, http_limits=limits) as address:
            stream = await trio.open_tcp_stream(*address)
            async with stream:
                await stream.send_all(head)
                for start in range(0, len(padded), 200):
                    await stream.send_all(padded[start : start + 200])
                    await trio.sleep(0.15)
                answer = await read_head(stream)
    assert answer is not None and answer.startswith(b"HTTP/1.1 200 "), answer


def test_client_address_keys() -> None:
    assert address_key(("127.0.0.1", 5000)) == "127.0.0.1"
    assert address_key(("::ffff:10.0.0.7", 5000, 0, 0)) == "10.0.0.7"
    # One IPv6 host owns a /64: its addresses count together.
    one = address_key(("2001:db8:1:2::1", 5000, 0, 0))
    assert one == address_key(("2001:db8:1:2:ffff::9", 6000, 0, 0)) == "2001:db8:1:2::/64"
    assert one != address_key(("2001:db8:1:3::1", 5000, 0, 0))
    assert address_key(("fe80::1%eth0", 5000, 0, 2)) == "fe80::/64"
    assert address_key("") is None  # a Unix socket's peer
    assert address_key(None) is None


def test_max_connections_per_address_flag() -> None:
    """``--max-connections-per-address`` reaches the listener (and names itself in the 503)."""
    import socket

    process = subprocess.Popen(
        cli(
            "serve",
            "tests/servers/wire.py",
            "--transport",
            "http",
            "--port",
            "0",
            "--max-connections",
            "10",
            "--max-connections-per-address",
            "1",
        ),
        cwd=ROOT,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    try:
        assert process.stderr is not None
        deadline = time.monotonic() + 15
        line = b""
        while b"listening" not in line and time.monotonic() < deadline:
            line = process.stderr.readline()
        found = re.search(rb"address=\('127\.0\.0\.1', (\d+)\)", line)
        assert found is not None, line
        port = int(found.group(1))
        with socket.create_connection(("127.0.0.1", port), timeout=5) as first:
            time.sleep(0.2)
            with socket.create_connection(("127.0.0.1", port), timeout=5) as second:
                second.sendall(HEAD + BODY)
                answer = b""
                while chunk := second.recv(4096):
                    answer += chunk
            assert answer.startswith(b"HTTP/1.1 503 "), answer
            assert b'"maxConnectionsPerAddress":1' in answer
            # The first connection holds its slot and is served.
            first.sendall(HEAD + BODY)
            assert first.recv(4096).startswith(b"HTTP/1.1 200 ")
    finally:
        process.terminate()
        process.wait(timeout=10)


async def test_a_client_resetting_at_the_connection_cap_does_not_end_the_server() -> None:
    """The 503 written to a connection its client already reset raised BrokenResourceError
    out of the accept handler, which ended the whole HTTP server."""
    import socket
    import struct

    app, _ = make_app()
    limits = HttpLimits(max_connections=1)
    with trio.fail_after(15):
        async with serving(app, http_limits=limits) as address:
            held = await trio.open_tcp_stream(*address)  # holds the one slot
            await trio.sleep(0.1)
            for _ in range(50):  # reset at once (SO_LINGER 0): an RST, no FIN
                sock = socket.socket()
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                sock.connect(address)
                sock.close()
            await trio.sleep(0.5)
            await held.aclose()
            await trio.sleep(0.2)
            head = await _post_from(address, "127.0.0.1")
            assert head.startswith(b"HTTP/1.1 200 "), head


async def test_the_websocket_listener_shares_per_address_too() -> None:
    app, _ = make_app()
    limits = HttpLimits(max_connections=4, max_connections_per_address=1)
    upgrade = (
        b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        b"Sec-WebSocket-Protocol: mcp\r\n\r\n"
    )
    with trio.fail_after(15):
        async with serving(app, "ws", http_limits=limits) as address:
            held = await trio.open_tcp_stream(*address)  # 127.0.0.1's one slot
            async with held:
                await trio.sleep(0.1)
                stream = await trio.open_tcp_stream(*address)
                async with stream:
                    await stream.send_all(upgrade)
                    refused = await _answer(stream)
                assert refused.startswith(b"HTTP/1.1 503 "), refused
                assert b"max_connections_per_address=1" in refused
                other = await trio.open_tcp_stream(*address, local_address="127.0.0.2")
                async with other:
                    await other.send_all(upgrade)
                    head = await read_head(other)
                assert head is not None and head.startswith(b"HTTP/1.1 101 "), head
