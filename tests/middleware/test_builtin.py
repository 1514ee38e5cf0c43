"""The shipped middleware against real sockets: rate limiting (429 + Retry-After on modern
HTTP, -32010 in band), response caching by the cache hints, authorization by scopes and
predicate, request logging with redaction, timing."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import pytest
import trio

from runtime import Server
from runtime.middleware import Authorize, RateLimit, RequestLogging, ResponseCache, Timing
from runtime.transports import HttpError

from ..transports.app import META, MODERN, init_body, modern, modern_headers, serving
from ..transports.http_client import request
from ..wire import open_memory_peer


@dataclass(frozen=True)
class Who:
    subject: str
    scopes: frozenset[str]

    def __str__(self) -> str:
        return self.subject


async def by_header(headers: dict[str, str]) -> Who:
    user = headers.get("x-user")
    if user is None:
        raise HttpError(401, "who are you")
    scopes = frozenset(filter(None, headers.get("x-scopes", "").split(",")))
    return Who(user, scopes)


def make_app(**options: Any) -> tuple[Server, dict[str, int]]:
    app = Server("mw-builtin", "1.0.0", **options)
    calls = {"read": 0}

    @app.tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @app.tool
    def admin_reset(password: str) -> str:
        """Dangerous."""
        return "reset"

    @app.resource("data://counter")
    def counter() -> str:
        """Counts its reads."""
        calls["read"] += 1
        return f"read {calls['read']}"

    @app.resource("secret://plans")
    def plans() -> str:
        """Secret."""
        return "world domination"

    return app, calls


async def post(address: Any, body: dict[str, Any], user: str, scopes: str = "") -> Any:
    params = body["params"]
    headers = modern_headers(body["method"], params.get("name") or params.get("uri"))
    headers.update({"x-user": user, "x-scopes": scopes})
    return await request(address, "POST", headers=headers, body=body)


def call(i: int, name: str, **arguments: Any) -> dict[str, Any]:
    return modern(i, "tools/call", {"name": name, "arguments": arguments})


async def test_rate_limit_429_with_retry_after_per_principal_and_overall() -> None:
    app, _ = make_app()
    limit = RateLimit(per_principal=(0.5, 2), overall=(0.01, 3))
    app.add_middleware(limit)
    with trio.fail_after(20):
        async with serving(app, authenticate=by_header) as address:
            for i in range(2):
                ok = await post(address, call(i, "add", a=1, b=i), "ann")
                assert ok.status == 200 and ok.json()["result"]["content"][0]["text"] == str(1 + i)
            refused = await post(address, call(3, "add", a=1, b=1), "ann")
            assert refused.status == 429
            assert refused.headers["retry-after"] == "2"  # 1 token at 0.5/s, rounded up
            error = refused.json()["error"]
            assert error["code"] == -32010
            assert error["data"]["limit"] == "principal"
            assert 1000 < error["data"]["retryAfterMs"] <= 2000
            # another principal has its own bucket; then the overall bucket (3) runs dry
            assert (await post(address, call(4, "add", a=0, b=0), "bob")).status == 200
            dry = await post(address, call(5, "add", a=0, b=0), "cat")
            assert dry.status == 429 and dry.json()["error"]["data"]["limit"] == "overall"
            # the handshake era answers in band with 200 (its revisions' rule)
            init = await request(address, "POST", headers={"x-user": "dan"}, body=init_body())
            assert init.status == 200  # initialize is never limited
    assert limit.refused == 2


async def test_rate_limit_in_band_over_a_stream_and_refills() -> None:
    app, _ = make_app()
    # One token, refilled in 0.5 s: the second call, right after the first, finds none even
    # on a loaded machine (at 20 per second a 50 ms stall between them refilled it).
    app.add_middleware(RateLimit(overall=(2, 1)))
    with trio.fail_after(10):
        async with open_memory_peer(app) as peer:
            await peer.initialize()
            first = await peer.call("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
            assert "result" in first
            second = await peer.call("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
            assert second["error"]["code"] == -32010
            assert second["error"]["message"] == "Server overloaded: rate limit exceeded"
            await trio.sleep(second["error"]["data"]["retryAfterMs"] / 1000 + 0.01)
            third = await peer.call("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
            assert "result" in third
            assert "result" in await peer.call("ping", {})  # never limited


async def test_response_cache_follows_the_hints_and_registry_changes() -> None:
    app, calls = make_app(
        cache_hints={"resources/read": (60_000, "private"), "tools/list": (60_000, "public")}
    )
    cache = ResponseCache()
    app.add_middleware(cache)
    read = {"uri": "data://counter"}
    with trio.fail_after(20):
        async with serving(app, authenticate=by_header) as address:
            one = await post(address, modern(1, "resources/read", read), "ann")
            two = await post(address, modern(2, "resources/read", read), "ann")
            assert one.json()["result"]["contents"][0]["text"] == "read 1"
            hit = two.json()["result"]
            assert hit["contents"][0]["text"] == "read 1"  # served from the cache
            assert hit["cacheScope"] == "private" and 0 < hit["ttlMs"] <= 60_000
            assert (
                hit["resultType"] == "complete"
                and hit["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "mw-builtin"
            )
            # private: another principal gets its own result
            other = await post(address, modern(3, "resources/read", read), "bob")
            assert other.json()["result"]["contents"][0]["text"] == "read 2"
            names = await post(address, modern(4, "tools/list"), "ann")
            assert [t["name"] for t in names.json()["result"]["tools"]] == ["add", "admin_reset"]

            @app.tool
            def late() -> str:
                """Added while serving."""
                return "late"

            again = await post(address, modern(5, "tools/list"), "bob")
            assert [t["name"] for t in again.json()["result"]["tools"]][-1] == "late"
            # an update drops the cached reads of that URI
            app.notify_resource_updated("data://counter")
            fresh = await post(address, modern(6, "resources/read", read), "ann")
            assert fresh.json()["result"]["contents"][0]["text"] == "read 3"
    assert calls["read"] == 3
    assert cache.hits == 1


async def test_response_cache_caches_nothing_at_a_zero_ttl() -> None:
    app, calls = make_app()  # the default hint: 0 ms
    app.add_middleware(ResponseCache())
    with trio.fail_after(10):
        async with open_memory_peer(app) as peer:
            await peer.initialize()
            for n in (1, 2):
                r = await peer.call("resources/read", {"uri": "data://counter"})
                assert r["result"]["contents"][0]["text"] == f"read {n}"
    assert calls["read"] == 2


async def test_authorize_by_scopes_and_predicate() -> None:
    app, _ = make_app()
    app.add_middleware(
        Authorize(
            tools={"admin_*": {"admin"}},
            resources={"secret://*": {"secrets"}},
            predicate=lambda who, kind, name: not (str(who) == "eve" and kind == "tool"),
        )
    )
    with trio.fail_after(20):
        async with serving(app, authenticate=by_header) as address:
            listed = await post(address, modern(1, "tools/list"), "ann")
            assert [t["name"] for t in listed.json()["result"]["tools"]] == ["add"]
            denied = await post(address, call(2, "admin_reset", password="pw"), "ann")
            assert denied.status == 200  # a handler's error: 200 on the modern wire
            assert denied.json()["error"] == {
                "code": -32003,
                "message": "Forbidden: tool 'admin_reset'",
                "data": {"tool": "admin_reset"},
            }
            allowed = await post(address, call(3, "admin_reset", password="pw"), "ann", "admin")
            assert allowed.json()["result"]["content"][0]["text"] == "reset"
            resources = await post(address, modern(4, "resources/list"), "ann")
            assert [r["uri"] for r in resources.json()["result"]["resources"]] == ["data://counter"]
            secret = await post(
                address, modern(5, "resources/read", {"uri": "secret://plans"}), "ann"
            )
            assert secret.json()["error"]["code"] == -32003
            read = await post(
                address, modern(6, "resources/read", {"uri": "secret://plans"}), "ann", "secrets"
            )
            assert read.json()["result"]["contents"][0]["text"] == "world domination"
            eve = await post(address, call(7, "add", a=1, b=1), "eve", "admin")
            assert eve.json()["error"]["code"] == -32003
            eve_list = await post(address, modern(8, "tools/list"), "eve", "admin")
            assert eve_list.json()["result"]["tools"] == []


async def test_request_logging_redacts_and_timing_counts(caplog: pytest.LogCaptureFixture) -> None:
    app, _ = make_app()
    timing = Timing()
    app.add_middleware(timing, RequestLogging(include_params=True))
    caplog.set_level(logging.INFO, logger="mcp_runtime.requests")
    with trio.fail_after(10):
        async with open_memory_peer(app) as peer:
            await peer.initialize()
            r = await peer.call(
                "tools/call", {"name": "admin_reset", "arguments": {"password": "hunter2"}}
            )
            assert r["result"]["content"][0]["text"] == "reset"
            await peer.call("tools/call", {"name": "nope", "arguments": {}})
            await peer.call(
                "tools/list",
                {"_meta": {META: MODERN, "io.modelcontextprotocol/clientCapabilities": {}}},
            )
    lines = [r.getMessage() for r in caplog.records if r.name == "mcp_runtime.requests"]
    assert all("hunter2" not in line for line in lines)
    reset = next(line for line in lines if "admin_reset" in line)
    assert "method=tools/call" in reset and "outcome=ok" in reset and "era=handshake" in reset
    assert '"password":"[REDACTED]"' in reset and "duration_ms=" in reset
    assert any("outcome=error:-32602" in line for line in lines)
    assert any("method=tools/list" in line and "era=modern" in line for line in lines)
    assert any("mcp notification method=notifications/initialized" in line for line in lines)
    assert timing.stats["tools/call"].count == 2
    assert timing.stats["tools/call"].errors == 1
    assert timing.stats["initialize"].count == 1
