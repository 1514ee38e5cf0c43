"""The middleware chain over a real framed connection (memory streams, both eras): order,
inspection, changes, short-circuits, errors, notifications, operations with typed
arguments, cancellation, and zero cost when none is installed."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from runtime import Limits, Server
from runtime._handlers import McpDispatcher
from runtime.middleware import (
    Middleware,
    MiddlewareDispatcher,
    Next,
    PromptGet,
    Request,
    ResourceRead,
    ToolCall,
)
from runtime.protocol import JSONRPCError

from ..transports.app import modern
from ..wire import open_memory_peer


def make_app(**limits: Any) -> Server:
    app = Server("mw", "1.0.0", limits=Limits(**limits))

    @app.tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @app.tool
    async def nap(seconds: float) -> str:
        """Sleep."""
        await trio.sleep(seconds)
        return "rested"

    @app.resource("notes://{name}")
    def note(name: str) -> str:
        """A note."""
        return f"note {name}"

    @app.prompt
    def greet(who: str) -> str:
        """Greet."""
        return f"hello {who}"

    return app


async def test_no_middleware_means_the_plain_era_dispatcher() -> None:
    app = make_app()
    # nothing wraps it, nothing runs
    assert type(app.dispatcher) is McpDispatcher
    app.add_middleware(Middleware())
    assert isinstance(app.dispatcher, MiddlewareDispatcher)


async def test_order_era_and_principal_seen_and_outcome() -> None:
    app = make_app()
    seen: list[tuple[str, ...]] = []

    def tracer(label: str) -> Any:
        async def mw(request: Request, call_next: Next) -> Any:
            seen.append((label, "in", request.method, request.era, str(request.principal)))
            result = await call_next()
            seen.append((label, "out", request.method))
            return result

        return mw

    app.add_middleware(tracer("outer"), tracer("inner"))
    with trio.fail_after(10):
        async with open_memory_peer(app) as peer:
            await peer.initialize()
            seen.clear()
            reply = await peer.call("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
            assert reply["result"]["content"][0]["text"] == "3"
            reply = await peer.call("tools/list", modern(9, "tools/list")["params"])
            assert reply["result"]["resultType"] == "complete"  # decorate still applies
    assert seen == [
        ("outer", "in", "tools/call", "handshake", "None"),
        ("inner", "in", "tools/call", "handshake", "None"),
        ("inner", "out", "tools/call"),
        ("outer", "out", "tools/call"),
        ("outer", "in", "tools/list", "modern", "None"),
        ("inner", "in", "tools/list", "modern", "None"),
        ("inner", "out", "tools/list"),
        ("outer", "out", "tools/list"),
    ]


async def test_modify_short_circuit_and_errors() -> None:
    app = make_app()

    @app.middleware
    async def rewrite(request: Request, call_next: Next) -> Any:
        if request.method == "tools/call":
            args = request.params["arguments"]
            if args.get("a") == 100:
                return {"content": [{"type": "text", "text": "short"}], "isError": False}
            if args.get("a") == 13:
                raise JSONRPCError(-32099, "unlucky", {"a": 13})
            if args.get("a") == 7:
                raise RuntimeError("secret detail")
            args["b"] = 1000  # changed before the handler sees it
        return await call_next()

    with trio.fail_after(10):
        async with open_memory_peer(app) as peer:
            await peer.initialize()

            async def add(a: int) -> Any:
                return await peer.call("tools/call", {"name": "add", "arguments": {"a": a, "b": 1}})

            assert (await add(1))["result"]["content"][0]["text"] == "1001"
            assert (await add(100))["result"]["content"][0]["text"] == "short"
            assert (await add(13))["error"] == {
                "code": -32099,
                "message": "unlucky",
                "data": {"a": 13},
            }
            crashed = await add(7)
            assert crashed["error"]["code"] == -32603
            assert "secret" not in str(crashed)
            # the connection lives on
            assert (await add(2))["result"]["content"][0]["text"] == "1002"
            unknown = await peer.call("no/such", {})
            assert unknown["error"]["code"] == -32601


class Ops(Middleware):
    def __init__(self) -> None:
        self.seen: list[Any] = []

    async def on_call_tool(self, call: ToolCall, call_next: Next) -> Any:
        self.seen.append(("tool", call.name, dict(call.arguments), call.request.era))
        if call.name == "add":
            call.arguments["a"] = call.arguments["a"] * 10
        result = await call_next()
        result["content"][0].text += "!"  # the handler's own result object, changed
        return result

    async def on_read_resource(self, read: ResourceRead, call_next: Next) -> Any:
        self.seen.append(("resource", read.uri))
        if read.uri == "notes://hidden":
            read.uri = "notes://shown"
        return await call_next()

    async def on_get_prompt(self, get: PromptGet, call_next: Next) -> Any:
        self.seen.append(("prompt", get.name, dict(get.arguments)))
        return await call_next()


async def test_operation_middleware_with_typed_arguments_in_both_eras() -> None:
    app = make_app()
    ops = Ops()
    app.add_middleware(ops)
    with trio.fail_after(10):
        async with open_memory_peer(app) as peer:
            await peer.initialize()
            r = await peer.call("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
            assert r["result"]["content"][0]["text"] == "23!"
            m = await peer.call(
                "tools/call",
                modern(0, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})["params"],
            )
            assert m["result"]["content"][0]["text"] == "11!"
            assert m["result"]["resultType"] == "complete"
            r = await peer.call("resources/read", {"uri": "notes://hidden"})
            assert r["result"]["contents"][0]["text"] == "note shown"
            r = await peer.call("prompts/get", {"name": "greet", "arguments": {"who": "ann"}})
            assert r["result"]["messages"][0]["content"]["text"] == "hello ann"
            # tools/list is not an operation: only the request hooks would see it
            await peer.call("tools/list", {})
    assert ops.seen == [
        ("tool", "add", {"a": 2, "b": 3}, "handshake"),
        ("tool", "add", {"a": 1, "b": 1}, "modern"),
        ("resource", "notes://hidden"),
        ("prompt", "greet", {"who": "ann"}),
    ]


async def test_runs_inside_the_request_scope_timeout_and_cancellation() -> None:
    app = make_app(request_timeout=0.3)
    events: list[str] = []

    @app.middleware
    async def watch(request: Request, call_next: Next) -> Any:
        try:
            return await call_next()
        except trio.Cancelled:
            events.append(f"cancelled {request.method} scope={request.cancel_scope is not None}")
            raise

    with trio.fail_after(10):
        async with open_memory_peer(app) as peer:
            await peer.initialize()
            r = await peer.call("tools/call", {"name": "nap", "arguments": {"seconds": 5}})
            assert r["error"]["code"] == -32001
            # client cancellation: no reply, the middleware sees the cancellation
            await peer.send(
                {
                    "jsonrpc": "2.0",
                    "id": 5,
                    "method": "tools/call",
                    "params": {"name": "nap", "arguments": {"seconds": 5}},
                }
            )
            await trio.sleep(0.05)
            await peer.send(
                {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}}
            )
            r = await peer.call("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
            assert r["id"] != 5  # no reply to the cancelled request came first
    assert events == ["cancelled tools/call scope=True", "cancelled tools/call scope=True"]


async def test_notifications_pass_through_their_chain() -> None:
    app = make_app()
    seen: list[str] = []

    class Notes(Middleware):
        async def on_notification(self, request: Request, call_next: Next) -> None:
            seen.append(request.method)
            await call_next()

    app.add_middleware(Notes)  # a subclass: instantiated
    with trio.fail_after(10):
        async with open_memory_peer(app) as peer:
            await peer.initialize()  # sends notifications/initialized
            r = await peer.call("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
            assert r["result"]["content"][0]["text"] == "2"  # the session did initialize
            await peer.send({"jsonrpc": "2.0", "method": "notifications/whatever"})
            await peer.call("ping", {})
    assert seen == ["notifications/initialized", "notifications/whatever"]


async def test_adding_middleware_while_serving_is_refused() -> None:
    app = make_app()
    with trio.fail_after(10):
        async with open_memory_peer(app) as peer:
            await peer.initialize()
            with pytest.raises(RuntimeError, match="before serving"):
                app.add_middleware(Middleware())
            reply = await peer.call("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
            assert reply["result"]["content"][0]["text"] == "2"
    app.add_middleware(Middleware())  # stopped serving: fine again
