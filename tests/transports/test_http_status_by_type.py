"""The type of a modern reply decides its HTTP status without reading it (``ErrorReply``,
issue 22 target 1); this holds it to the rule that reads the bytes (``status_of``,
2026-07-28 basic/transports/streamable-http) over a seeded corpus of POSTs: errors made by
the dispatcher, by handlers (codes with their own status among them) and by middleware,
results that look like errors, wrong arguments, unknown tools, methods and resources."""

from __future__ import annotations

import random
from typing import Any

import msgspec
import trio

from runtime import JSONRPCError, Server
from runtime.middleware import Next, Request
from runtime.protocol import retry_after, status_of

from .app import modern, modern_headers, serving
from .http_client import connect

#: Error codes with a status of their own (400, 404, 429 with retryAfterMs), and ordinary ones.
CODES = [-32700, -32600, -32601, -32602, -32603, -32002, -32010, -32020, -32021, -32022, 1, -1]


def make_app() -> Server:
    app = Server("status-by-type")

    @app.tool
    async def fail(code: int, retry_ms: int | None = None) -> str:
        data = None if retry_ms is None else {"retryAfterMs": retry_ms}
        raise JSONRPCError(code, f"failed with {code}", data)

    @app.tool
    async def crash() -> str:
        raise ValueError("not for the wire")

    @app.tool
    def echo(text: str) -> str:
        return text

    @app.resource("mem://here")
    def here() -> str:
        return "here"

    @app.middleware
    async def answer_early(request: Request, call_next: Next) -> Any:
        early = (request.meta or {}).get("example.com/answer")
        if isinstance(early, int):
            raise JSONRPCError(early, "refused by middleware", {"retryAfterMs": 1500})
        if early == "result":
            return {"content": [], "isError": False}
        return await call_next()

    return app


def _corpus(rng: random.Random, n: int) -> list[tuple[str, str | None, dict[str, Any]]]:
    mimics = [
        '{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"x"}}',
        '"error":{"code":-32021}',
        "plain",
    ]
    out: list[tuple[str, str | None, dict[str, Any]]] = []
    for _ in range(n):
        kind = rng.randrange(9)
        if kind == 0:
            params = {"code": rng.choice(CODES)}
            if rng.random() < 0.5:
                params["retry_ms"] = rng.choice([0, 999, 2500])
            out.append(("tools/call", "fail", {"name": "fail", "arguments": params}))
        elif kind == 1:
            out.append(("tools/call", "crash", {"name": "crash", "arguments": {}}))
        elif kind == 2:
            text = rng.choice(mimics)
            out.append(("tools/call", "echo", {"name": "echo", "arguments": {"text": text}}))
        elif kind == 3:  # wrong argument types
            args = {"text": rng.choice([1, None, [], {"a": 1}])}
            out.append(("tools/call", "echo", {"name": "echo", "arguments": args}))
        elif kind == 4:
            out.append(("tools/call", "nope", {"name": "nope", "arguments": {}}))
        elif kind == 5:
            uri = rng.choice(["mem://here", "mem://missing"])
            out.append(("resources/read", uri, {"uri": uri}))
        elif kind == 6:
            out.append((rng.choice(["no/such", "tools/nope", "x"]), None, {}))
        elif kind == 7:
            answer: Any = rng.choice([*CODES, "result"])
            meta = {"_meta": {"example.com/answer": answer}}
            out.append(("tools/call", "echo", {"name": "echo", "arguments": {}, **meta}))
        else:
            out.append((rng.choice(["tools/list", "resources/list", "ping"]), None, {}))
    return out


async def test_the_status_of_every_modern_answer_is_the_one_its_bytes_give() -> None:
    corpus = _corpus(random.Random(22), 300)
    seen_statuses: set[int] = set()
    with trio.fail_after(60):
        async with serving(make_app()) as address:
            conn = await connect(address)
            try:
                for request_id, (method, name, params) in enumerate(corpus, 1):
                    await conn.send(
                        "POST",
                        "/mcp",
                        headers=modern_headers(method, name),
                        body=modern(request_id, method, params),
                    )
                    response = await conn.response()
                    conn.conn.start_next_cycle()  # (h11: the same connection, kept alive)
                    reply = msgspec.json.decode(response.body)
                    assert reply["id"] == request_id, (method, params, response.body)
                    assert ("error" in reply) != ("result" in reply)
                    expected = status_of(response.body)
                    assert response.status == expected, (method, params, response.body)
                    if expected == 429:
                        assert response.headers["retry-after"] == retry_after(response.body)
                    seen_statuses.add(response.status)
            finally:
                await conn.aclose()
    # The corpus reaches every status a modern answer can have.
    assert seen_statuses == {200, 400, 404, 429}
