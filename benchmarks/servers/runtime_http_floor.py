"""This runtime's HTTP layer with no MCP behind it: what the HTTP part of a request costs.

    python runtime_http_floor.py PORT

Serves ``mcp-runtime``'s HTTP/1.1 server (parser, driver, edge checks, one write per
answer) with an application that answers every request with one fixed JSON-RPC result;
``python -m benchmarks.http_floor`` compares it with the full modern ``tools/call`` path.
"""

import sys

import trio

from runtime.transports.http._edge import EdgePolicy, HttpLimits
from runtime.transports.http._exchange import Exchange, HttpRequest
from runtime.transports.http._server import serve_http_listeners

BODY = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello, benchmark"}]}}'


async def app(request: HttpRequest, exchange: Exchange) -> None:
    await exchange.respond(200, BODY)


async def main(port: int) -> None:
    listeners = await trio.open_tcp_listeners(port, host="127.0.0.1")
    async with trio.open_nursery() as nursery:
        await serve_http_listeners(
            listeners,
            app,
            policy=EdgePolicy(),
            limits=HttpLimits(),
            max_body_size=4 << 20,
            write_timeout=30.0,
            shutdown=trio.Event(),
            handler_nursery=nursery,
        )


if __name__ == "__main__":
    trio.run(main, int(sys.argv[1]))
