"""Safe at the edge: Origin/Host allow-lists, size limits, slow senders, connection limits."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from runtime.transports import EdgePolicy, HttpError, HttpLimits

from .app import call, init_body, make_app, serving, until
from .http_client import connect, request


async def test_foreign_origin_gets_403() -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            evil = await request(
                address, "POST", headers={"origin": "http://evil.example"}, body=init_body()
            )
            assert evil.status == 403
            assert evil.json()["error"]["message"] == "Forbidden: Origin not allowed"
            local = await request(
                address, "POST", headers={"origin": "http://localhost:5173"}, body=init_body()
            )
            assert local.status == 200


async def test_each_new_head_on_a_keep_alive_connection_is_checked_at_the_edge() -> None:
    # The driver skips the checks only for the very head that passed them before (the
    # parser hands out the same immutable head for the same bytes); any other is checked.
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            conn = await connect(address)
            try:
                local = {"origin": "http://localhost"}
                for _ in range(2):
                    await conn.send("POST", "/mcp", headers=local, body=init_body())
                    assert (await conn.response()).status == 200
                    conn.conn.start_next_cycle()  # the same keep-alive connection
                evil = {"origin": "http://evil.example"}
                await conn.send("POST", "/mcp", headers=evil, body=init_body())
                evil = await conn.response()
                assert evil.status == 403
                assert evil.json()["error"]["message"] == "Forbidden: Origin not allowed"
            finally:
                await conn.aclose()


async def test_foreign_host_gets_403() -> None:
    # DNS rebinding: the attacker's name resolves to 127.0.0.1 and arrives in Host.
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            response = await request(
                address, "POST", headers={"host": "evil.example:8000"}, body=init_body()
            )
            assert response.status == 403


async def test_configured_allow_lists_replace_the_defaults() -> None:
    app, _ = make_app()
    options = {"allowed_origins": ["https://app.example"], "allowed_hosts": ["*"]}
    with trio.fail_after(10):
        async with serving(app, **options) as address:
            ok = await request(
                address,
                "POST",
                headers={"origin": "https://app.example", "host": "mcp.example"},
                body=init_body(),
            )
            assert ok.status == 200
            refused = await request(
                address, "POST", headers={"origin": "http://localhost"}, body=init_body()
            )
            assert refused.status == 403


def test_edge_policy_defaults() -> None:
    loopback = EdgePolicy.for_bind("127.0.0.1")
    assert loopback.check("localhost:8000", None) is None
    assert loopback.check("[::1]:8000", "http://[::1]:3000") is None
    assert loopback.check("127.0.0.1", "null") == "Origin not allowed"
    assert loopback.check(None, None) == "missing Host header"
    public = EdgePolicy.for_bind("0.0.0.0")
    # Same origin (either scheme: a TLS-terminating proxy may sit in front).
    assert public.check("mcp.example", "https://mcp.example") is None
    assert public.check("mcp.example", "http://mcp.example:8080") == "Origin not allowed"
    assert public.check("mcp.example", "http://evil.example") == "Origin not allowed"


async def test_five_mib_body_gets_413() -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            size = 5 << 20
            stream = await trio.open_tcp_stream(*address)
            head = (
                b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n" % size
            )
            await stream.send_all(head + b"{" * 1024)
            reply = await stream.receive_some(4096)
            await stream.aclose()
            assert reply.startswith(b"HTTP/1.1 413 ")
            # Chunked (no length up front): cut off once the body passes the limit.
            conn = await connect(address)
            chunk = b"a" * (1 << 20)

            async def send_chunks() -> None:
                import contextlib

                head = (
                    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                )
                with contextlib.suppress(trio.BrokenResourceError):
                    await conn.stream.send_all(head)
                    for _ in range(5):
                        await conn.stream.send_all(b"%x\r\n%b\r\n" % (len(chunk), chunk))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(send_chunks)
                data = b""
                while b"\r\n" not in data:
                    more = await conn.stream.receive_some(4096)
                    assert more
                    data += more
            await conn.aclose()
            assert data.startswith(b"HTTP/1.1 413 ")


async def test_too_many_header_fields_get_431() -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            headers = {f"x-h{i}": "v" for i in range(150)}
            response = await request(address, "POST", headers=headers, body=init_body())
            assert response.status == 431


async def test_oversized_header_section_gets_431() -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            response = await request(address, "POST", headers={"x-big": "v" * 20000}, body=b"{}")
            assert response.status == 431


async def test_slowloris_is_cut_off_without_blocking_others() -> None:
    app, _ = make_app()
    limits = HttpLimits(header_timeout=0.5)
    with trio.fail_after(10):
        async with serving(app, http_limits=limits) as address:
            slow = await trio.open_tcp_stream(*address)
            started = trio.current_time()

            async def dribble() -> bytes:
                head = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
                for byte in head:
                    try:
                        await slow.send_all(bytes([byte]))
                    except trio.BrokenResourceError:
                        break
                    await trio.sleep(0.05)
                return await slow.receive_some(1000)

            async with trio.open_nursery() as nursery:
                result: list[bytes] = []

                async def run() -> None:
                    result.append(await dribble())

                nursery.start_soon(run)
                # Meanwhile another client is served at once.
                ok = await request(address, "POST", body=init_body())
                assert ok.status == 200
            # The slow client's connection was closed by the server after ~0.5 s.
            assert trio.current_time() - started < 3
            assert result[0] == b"" or result[0].startswith(b"HTTP/1.1 408")
            await slow.aclose()


async def test_idle_connections_do_not_stop_a_new_client() -> None:
    app, _ = make_app()
    with trio.fail_after(15):
        async with serving(app) as address:
            idle = [await trio.open_tcp_stream(*address) for _ in range(200)]
            response = await request(address, "POST", body=init_body())
            assert response.status == 200
            for stream in idle:
                await stream.aclose()


async def test_connection_limit_gives_503() -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        # (Per address as many: all three come from 127.0.0.1.)
        limits = HttpLimits(max_connections=2, max_connections_per_address=2)
        async with serving(app, http_limits=limits) as address:
            held = [await trio.open_tcp_stream(*address) for _ in range(2)]
            await trio.sleep(0.1)
            response = await request(address, "POST", body=init_body())
            assert response.status == 503
            for stream in held:
                await stream.aclose()


async def test_authenticate_hook_and_sessions_bound_to_their_principal() -> None:
    app, _ = make_app()

    async def authenticate(headers: dict[str, str]) -> Any:
        token = headers.get("authorization", "")
        if not token.startswith("Bearer "):
            raise HttpError(
                401,
                "Unauthorized",
                headers=[("WWW-Authenticate", 'Bearer resource_metadata="http://x/.well-known"')],
            )
        return token.removeprefix("Bearer ")

    with trio.fail_after(10):
        async with serving(app, authenticate=authenticate) as address:
            anonymous = await request(address, "POST", body=init_body())
            assert anonymous.status == 401
            assert anonymous.headers["www-authenticate"].startswith("Bearer ")
            alice = {"authorization": "Bearer alice"}
            created = await request(address, "POST", headers=alice, body=init_body())
            session_id = created.headers["mcp-session-id"]
            mine = await request(
                address,
                "POST",
                headers={**alice, "mcp-session-id": session_id},
                body=call(1, "add", a=1, b=1),
            )
            assert mine.status == 200
            stolen = await request(
                address,
                "POST",
                headers={"authorization": "Bearer mallory", "mcp-session-id": session_id},
                body=call(2, "add", a=1, b=1),
            )
            assert stolen.status == 404


@pytest.mark.parametrize("method", ["PUT", "PATCH"])
async def test_other_methods_get_405(method: str) -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            response = await request(address, method, body=b"{}")
            assert response.status == 405


async def test_auth_error_objects_are_sent_as_given() -> None:
    # runtime.auth.AuthError (status, headers, body) is accepted as a refusal.
    from runtime.auth import AuthError

    app, _ = make_app()

    async def authenticate(headers: dict[str, str]) -> Any:
        return AuthError(401, None, 'Bearer resource_metadata="http://x/m"', b'{"error":"x"}')

    with trio.fail_after(10):
        async with serving(app, authenticate=authenticate) as address:
            response = await request(address, "POST", body=init_body())
            assert response.status == 401
            assert response.headers["www-authenticate"] == 'Bearer resource_metadata="http://x/m"'
            assert response.body == b'{"error":"x"}'


async def test_graceful_shutdown_finishes_in_flight_and_ends_sse_streams() -> None:
    app, seen = make_app(shutdown_grace=5)
    with trio.fail_after(10):
        async with serving(app) as address:
            init = await request(address, "POST", body=init_body())
            session_id = init.headers["mcp-session-id"]
            headers = {"mcp-session-id": session_id}
            standing = await connect(address)
            await standing.send("GET", "/mcp", headers=headers)
            assert (await standing.head()).status == 200
            conn = await connect(address)
            await conn.send(
                "POST", "/mcp", headers=headers, body=call(1, "slow", tag="s", seconds=0.3)
            )
            await until(lambda: seen["started"])
            app.shutdown()
            response = await conn.response()
            assert response.status == 200 and response.json()["result"]["content"][0]["text"] == "s"
            assert seen["finished"] == ["s"]
            # The standing stream ends cleanly (priming event, then the end of the body).
            events = await standing.events()
            assert [event.data for event in events] == [""]
            # New work is refused (503) or the listener is already gone: refused, or reset
            # from the backlog of the listener closed (trio.serve_listeners) once the last
            # connection open at shutdown ended, which may be just after this one came.
            try:
                refused = await request(
                    address, "POST", headers=headers, body=call(2, "add", a=1, b=1)
                )
            except (OSError, trio.BrokenResourceError):
                return
            assert refused.status == 503
