"""What the client does with the server's requests when the server misbehaves: a duplicate
id gets -32600 and the first request is still answered; past ``max_server_requests`` the
excess gets -32010 at once, naming the limit; a flood of pings over stdio and over HTTP is
answered request by request without more tasks or connections than the limits allow.
Raw servers on loopback (and a stdio script) record what the client sends back."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime.client import open_client

from .hostile import INITIALIZED, NO_TOOLS, Exchange, HttpPeer, LinePeer, reply, serve_lines
from .test_sdk_peer import run_cli

HOSTILE = Path(__file__).with_name("hostile_stdio.py")
ROOTS_7 = b'{"jsonrpc":"2.0","id":7,"method":"roots/list"}'


def _stdio(scenario: str, log: Path) -> list[str]:
    return [sys.executable, str(HOSTILE), *scenario.split(), str(log)]


def _sent(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


async def test_a_duplicate_id_is_refused_and_the_first_is_still_answered() -> None:
    release = trio.Event()
    served: list[dict[str, Any]] = []
    answers: list[dict[str, Any]] = []

    async def roots(params: dict[str, Any]) -> dict[str, Any]:
        served.append(params)
        await release.wait()
        return {"roots": [{"uri": "file:///w", "name": "w"}]}

    async def script(peer: LinePeer) -> None:
        listing = await peer.discover()
        await peer.send(ROOTS_7, ROOTS_7)  # one write: the second arrives while the first runs
        answers.append(await peer.receive())
        release.set()
        answers.append(await peer.receive())
        await peer.send(reply(listing, NO_TOOLS))
        await peer.send(reply(await peer.receive(), NO_TOOLS))  # the connection still serves
        await trio.sleep_forever()

    async with serve_lines(script) as target:
        with trio.fail_after(10):
            async with open_client(target, era="modern", roots=roots, timeout=5) as client:
                assert (await client.list_tools()).tools == []
                assert (await client.list_tools()).tools == []
    refusal, answer = answers
    assert refusal["id"] == 7 and refusal["error"]["code"] == -32600
    assert "Duplicate request id 7" in refusal["error"]["message"]
    assert answer == {
        "jsonrpc": "2.0",
        "id": 7,
        "result": {"roots": [{"uri": "file:///w", "name": "w"}]},
    }
    assert len(served) == 1


async def test_a_duplicate_id_over_stdio_and_through_the_cli(tmp_path: Path) -> None:
    """The same over a real stdio server, and through ``mcp-runtime list``: it exits 0."""
    log = tmp_path / "sent.log"

    async def roots(params: dict[str, Any]) -> dict[str, Any]:
        await trio.sleep(0.2)
        return {"roots": []}

    with trio.fail_after(20):
        async with open_client(_stdio("duplicate", log), roots=roots, timeout=10) as client:
            assert (await client.list_tools()).tools == []
            assert (await client.list_tools()).tools == []
    to_7 = [message for message in _sent(log) if message.get("id") == 7]
    assert [message.get("error", {}).get("code") for message in to_7] == [-32600, None]
    assert to_7[1]["result"] == {"roots": []}
    cli_log = tmp_path / "cli.log"
    code, _out, err = await run_cli("list", shlex.join(_stdio("duplicate", cli_log)), "tools")
    assert code == 0, err
    # the duplicate is refused at once; the first gets -32601 (the CLI answers no roots)
    codes = [m.get("error", {}).get("code") for m in _sent(cli_log) if m.get("id") == 7]
    assert codes == [-32600, -32601]


async def test_requests_past_max_server_requests_are_refused_at_once() -> None:
    release = trio.Event()
    running = 0
    most = 0
    refusals: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []

    async def roots(params: dict[str, Any]) -> dict[str, Any]:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await release.wait()
        running -= 1
        return {"roots": []}

    async def script(peer: LinePeer) -> None:
        listing = await peer.discover()
        await peer.send(
            *(b'{"jsonrpc":"2.0","id":%d,"method":"roots/list"}' % n for n in range(20))
        )
        for _ in range(16):  # the excess is refused before any handler returns
            refusals.append(await peer.receive())
        release.set()
        for _ in range(4):
            results.append(await peer.receive())
        await peer.send(reply(listing, NO_TOOLS))
        await trio.sleep_forever()

    async with serve_lines(script) as target:
        with trio.fail_after(10):
            async with open_client(
                target, era="modern", roots=roots, max_server_requests=4, timeout=5
            ) as client:
                assert (await client.list_tools()).tools == []
                assert client._conversation.most_serving == 4
    assert most == 4
    assert sorted(message["id"] for message in refusals) == list(range(4, 20))
    for message in refusals:
        assert message["error"]["code"] == -32010
        assert "max_server_requests" in message["error"]["message"]
        assert message["error"]["data"] == {"maxServerRequests": 4}
    assert sorted(message["id"] for message in results) == [0, 1, 2, 3]
    assert all(message["result"] == {"roots": []} for message in results)


async def test_a_ping_flood_over_stdio_is_answered_within_the_bound(tmp_path: Path) -> None:
    """3,000 pings in one write: each gets exactly one answer (``{}``, or -32010 past the
    bound), never more than ``max_server_requests`` served at once; the client serves on."""
    log = tmp_path / "sent.log"
    with trio.fail_after(60):
        async with open_client(
            _stdio("flood 3000", log), max_server_requests=8, timeout=50
        ) as client:
            assert (await client.list_tools()).tools == []
            assert (await client.list_tools()).tools == []
            assert client._conversation.most_serving <= 8
    answers = [message for message in _sent(log) if str(message.get("id")).startswith("p")]
    assert sorted(message["id"] for message in answers) == sorted(f"p{n}" for n in range(3000))
    refused = [message for message in answers if "error" in message]
    assert refused, "the flood never went past the bound"
    assert all(message["error"]["code"] == -32010 for message in refused)
    assert all(message["result"] == {} for message in answers if "error" not in message)


async def test_a_ping_flood_over_http_opens_at_most_max_connections() -> None:
    """Handshake era: the session's GET stream carries a flood of pings in one write; each
    answer is a POST, which this server takes 20 ms to accept. At most ``max_connections``
    connections are ever open at once (measured at the server; one per answer in flight
    before) and every ping is answered exactly once."""
    pings = 300
    answered: dict[str, dict[str, Any]] = {}
    done = trio.Event()

    async def script(exchange: Exchange) -> bool:
        message = exchange.message
        if exchange.method == "DELETE":
            await exchange.accepted()
        elif exchange.method == "GET":
            await exchange.start_events()
            await exchange.stream.send_all(
                b"".join(
                    b'data: {"jsonrpc":"2.0","id":"p%d","method":"ping"}\n\n' % n
                    for n in range(pings)
                )
            )
            await done.wait()
            return True
        elif message.get("method") == "initialize":
            await exchange.json(reply(message, INITIALIZED), extra="Mcp-Session-Id: s1\r\n")
        elif message.get("method") == "tools/list":
            await done.wait()
            await exchange.json(reply(message, NO_TOOLS))
        elif "id" in message and "method" not in message:  # an answer to a ping
            answered[message["id"]] = message
            if len(answered) == pings:
                done.set()
            await trio.sleep(0.02)
            await exchange.accepted()
        else:
            await exchange.accepted()
        return False

    peer = HttpPeer(script)
    async with peer.serving() as url:
        with trio.fail_after(60):
            async with open_client(
                url, era="handshake", max_connections=8, max_server_requests=16, timeout=50
            ) as client:
                assert (await client.list_tools()).tools == []
                pool = client._link.pool  # type: ignore[union-attr]
                assert pool.most_open <= 8
    assert sorted(answered) == sorted(f"p{n}" for n in range(pings))
    assert peer.most_open <= 8, peer.most_open


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_server_requests": 0}, "max_server_requests must be >= 1"),
        ({"max_server_requests": 2.5}, "max_server_requests must be an int"),
        ({"max_connections": 2}, "max_connections must be >= 3"),
        ({"max_connections": True}, "max_connections must be an int"),
        ({"max_message_size": 0}, "max_message_size must be >= 1"),
    ],
)
async def test_out_of_range_bounds_are_refused_before_connecting(
    options: dict[str, Any], message: str
) -> None:
    for target in ("http://127.0.0.1:9/mcp", "tcp://127.0.0.1:9"):
        with trio.fail_after(5), pytest.raises(ValueError, match=message):
            async with open_client(target, **options):
                pass  # pragma: no cover


async def test_a_server_refusing_the_clients_answer_does_not_end_the_client() -> None:
    """Handshake era over HTTP: the server pings on its GET stream, then answers the POST
    carrying the client's answer with 400. The client logs it and serves on."""
    refused = trio.Event()

    async def script(exchange: Exchange) -> bool:
        message = exchange.message
        if exchange.method == "DELETE":
            await exchange.accepted()
        elif exchange.method == "GET":
            await exchange.start_events()
            await exchange.event(b'{"jsonrpc":"2.0","id":"p","method":"ping"}')
            await trio.sleep_forever()
        elif message.get("method") == "initialize":
            await exchange.json(reply(message, INITIALIZED), extra="Mcp-Session-Id: s1\r\n")
        elif message.get("method") == "tools/list":
            await refused.wait()
            await exchange.json(reply(message, NO_TOOLS))
        elif message.get("id") == "p":  # the client's answer to the ping
            await exchange.json({"error": "no"}, status="400 Bad Request")
            refused.set()
        else:
            await exchange.accepted()
        return False

    async with HttpPeer(script).serving() as url:
        with trio.fail_after(10):
            async with open_client(url, era="handshake", timeout=5) as client:
                assert (await client.list_tools()).tools == []
                assert (await client.list_tools()).tools == []
