"""``serve_http(auth=AuthConfig)`` / ``serve_websocket(auth=...)``: runtime.auth end to end,
with real signed JWTs over raw HTTP and WebSocket."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
import trio
from trio_websocket import ConnectionRejected, open_websocket_url

from runtime import Context
from runtime.auth import AuthConfig, JWTVerifier, ProtectedResourceMetadata

from ..auth._tokens import ISSUER, METADATA_URL, RESOURCE, SigningKey, claims, jwks, make_ec
from .app import call, init_body, make_app, modern, modern_headers, serving
from .http_client import Response, request

METADATA = ProtectedResourceMetadata(resource=RESOURCE, authorization_servers=[ISSUER])
CHALLENGE_401 = f'Bearer resource_metadata="{METADATA_URL}", scope="mcp:read"'
INVALID_TOKEN = (
    'Bearer error="invalid_token", error_description="the access token is invalid or expired", '
    f'resource_metadata="{METADATA_URL}", scope="mcp:read"'
)
INSUFFICIENT = (
    'Bearer error="insufficient_scope", '
    'error_description="the access token lacks a required scope", '
    f'resource_metadata="{METADATA_URL}", scope="math:write mcp:read"'
)


@pytest.fixture(scope="module")
def key() -> SigningKey:
    return make_ec("ec-transport")


@pytest.fixture(scope="module")
def config(key: SigningKey) -> AuthConfig:
    return AuthConfig(
        verifier=JWTVerifier(jwks=jwks(key), issuer=ISSUER, audience=RESOURCE),
        resource_metadata=METADATA,
        required_scopes=frozenset({"mcp:read"}),
        tool_scopes={"add": frozenset({"math:write"})},
    )


def bearer(key: SigningKey, **overrides: Any) -> dict[str, str]:
    return {"authorization": f"Bearer {key.sign(claims(**overrides))}"}


async def raw(address: Any, head: bytes, body: bytes = b"") -> bytes:
    """Send hand-written request bytes (for what a dict of headers cannot express)."""
    stream = await trio.open_tcp_stream(*address)
    await stream.send_all(head + b"Content-Length: %d\r\n\r\n" % len(body) + body)
    out = b""
    while chunk := await stream.receive_some(65536):
        out += chunk
        if b"\r\n\r\n" in out:
            break
    await stream.aclose()
    return out


async def test_no_token_gets_401_with_the_exact_challenge(config: AuthConfig) -> None:
    app, _ = make_app()
    with trio.fail_after(5):
        async with serving(app, auth=config) as address:
            for path, body in (("/mcp", init_body()), ("/sse", b"")):
                method = "POST" if body else "GET"
                response = await request(address, method, path, body=body)
                assert response.status == 401, path
                assert response.headers["www-authenticate"] == CHALLENGE_401
                assert response.headers["cache-control"] == "no-store"
                assert response.json()["error"] == "unauthorized"


async def test_bad_tokens_get_401_invalid_token(config: AuthConfig, key: SigningKey) -> None:
    app, _ = make_app()
    stranger = make_ec("ec-stranger")
    with trio.fail_after(5):
        async with serving(app, auth=config) as address:
            for headers in (
                bearer(stranger),  # unknown key
                bearer(key, aud="https://other.example.com/mcp"),  # another resource
                bearer(key, exp=1000),  # expired
                {"authorization": "Bearer not.a.jwt"},
            ):
                response = await request(address, "POST", headers=headers, body=init_body())
                assert response.status == 401
                assert response.headers["www-authenticate"] == INVALID_TOKEN


async def test_malformed_authorization_is_refused(config: AuthConfig, key: SigningKey) -> None:
    app, _ = make_app()
    token = key.sign(claims())
    body = json.dumps(init_body()).encode()
    with trio.fail_after(5):
        async with serving(app, auth=config) as address:
            host = b"Host: %s:%d\r\n" % (address[0].encode(), address[1])
            common = host + b"Content-Type: application/json\r\nAccept: application/json\r\n"
            twice = (
                b"POST /mcp HTTP/1.1\r\n" + common + b"Authorization: Bearer " + token.encode()
                + b"\r\nAuthorization: Bearer " + token.encode() + b"\r\n"
            )  # fmt: skip
            answer = await raw(address, twice, body)
            assert answer.startswith(b"HTTP/1.1 400 ")
            assert b'error="invalid_request"' in answer
            # A token in the query string is refused even next to a good header.
            in_query = await request(
                address, "POST", f"/mcp?access_token={token}", body=init_body()
            )
            assert in_query.status == 400
            assert 'error="invalid_request"' in in_query.headers["www-authenticate"]


async def test_insufficient_scope_for_a_tool_gets_403(config: AuthConfig, key: SigningKey) -> None:
    app, _ = make_app()
    reader = bearer(key)
    writer = bearer(key, scope="mcp:read math:write")
    with trio.fail_after(5):
        async with serving(app, auth=config) as address:
            init = await request(address, "POST", headers=reader, body=init_body("2025-03-26"))
            assert init.status == 200
            session = {"mcp-session-id": init.headers["mcp-session-id"]}
            listed = await request(
                address,
                "POST",
                headers={**reader, **session},
                body={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            )
            assert listed.status == 200
            denied = await request(
                address, "POST", headers={**reader, **session}, body=call(3, "add", a=1, b=2)
            )
            assert denied.status == 403
            assert denied.headers["www-authenticate"] == INSUFFICIENT
            assert denied.json()["error"] == "insufficient_scope"
            # Each tools/call inside a 2025-03-26 batch is checked.
            batch = [call(4, "countdown", start=1), call(5, "add", a=1, b=1)]
            in_batch = await request(address, "POST", headers={**reader, **session}, body=batch)
            assert in_batch.status == 403
            assert in_batch.headers["www-authenticate"] == INSUFFICIENT
            # A token refresh with the scope (same subject and client) keeps the session.
            allowed = await request(
                address, "POST", headers={**writer, **session}, body=call(6, "add", a=1, b=2)
            )
            assert allowed.status == 200
            assert allowed.json()["result"]["content"][0]["text"] == "3"
            # Modern requests are checked the same way.
            body = modern(7, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
            hdrs = modern_headers("tools/call", "add")
            assert (await request(address, "POST", headers=hdrs, body=body)).status == 401
            modern_denied = await request(address, "POST", headers={**hdrs, **reader}, body=body)
            assert modern_denied.status == 403
            modern_ok = await request(address, "POST", headers={**hdrs, **writer}, body=body)
            assert modern_ok.status == 200


async def test_metadata_document_at_both_well_known_paths_without_auth(
    config: AuthConfig,
) -> None:
    app, _ = make_app()
    with trio.fail_after(5):
        async with serving(app, auth=config) as address:
            for path in (
                "/.well-known/oauth-protected-resource/mcp",
                "/.well-known/oauth-protected-resource",
            ):
                response = await request(address, "GET", path)
                assert response.status == 200, path
                assert response.headers["content-type"] == "application/json"
                assert response.json() == {
                    "resource": RESOURCE,
                    "authorization_servers": [ISSUER],
                    "bearer_methods_supported": ["header"],
                }
            posted = await request(address, "POST", "/.well-known/oauth-protected-resource")
            assert posted.status == 405
        # Without auth there is no document.
        async with serving(make_app()[0]) as address:
            missing = await request(address, "GET", "/.well-known/oauth-protected-resource")
            assert missing.status == 404


async def test_session_of_another_principal_is_404(config: AuthConfig, key: SigningKey) -> None:
    app, _ = make_app()
    alice = bearer(key, sub="alice")
    with trio.fail_after(5):
        async with serving(app, auth=config) as address:
            init = await request(address, "POST", headers=alice, body=init_body())
            session = {"mcp-session-id": init.headers["mcp-session-id"]}
            body = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
            mine: Response = await request(address, "POST", headers={**alice, **session}, body=body)
            assert mine.status == 200
            refreshed = bearer(key, sub="alice", iat=claims()["iat"] + 1)
            again = await request(address, "POST", headers={**refreshed, **session}, body=body)
            assert again.status == 200
            for thief in (bearer(key, sub="mallory"), bearer(key, sub="alice", client_id="evil")):
                stolen = await request(address, "POST", headers={**thief, **session}, body=body)
                assert stolen.status == 404
                get = await request(address, "GET", headers={**thief, **session})
                assert get.status == 404
                delete = await request(address, "DELETE", headers={**thief, **session})
                assert delete.status == 404


async def test_tokens_are_never_logged(
    config: AuthConfig, key: SigningKey, caplog: pytest.LogCaptureFixture
) -> None:
    app, _ = make_app()
    caplog.set_level(logging.DEBUG)
    good = bearer(key)
    bad = bearer(make_ec("ec-stranger-2"))
    with trio.fail_after(5):
        async with serving(app, auth=config) as address:
            for headers in (good, bad):
                await request(address, "POST", headers=headers, body=init_body())
    assert caplog.records
    for headers in (good, bad):
        token = headers["authorization"].removeprefix("Bearer ")
        assert token not in caplog.text
        assert token.split(".")[2] not in caplog.text


async def test_websocket_upgrade_is_authenticated(config: AuthConfig, key: SigningKey) -> None:
    app, _ = make_app()
    with trio.fail_after(5):
        async with serving(app, "ws", auth=config) as (host, port):
            url = f"ws://{host}:{port}/mcp"
            with pytest.raises(ConnectionRejected) as rejected:
                async with open_websocket_url(url, subprotocols=["mcp"]):
                    pass  # pragma: no cover
            assert rejected.value.status_code == 401
            headers = {k.decode().lower(): v.decode() for k, v in rejected.value.headers or []}
            assert headers["www-authenticate"] == CHALLENGE_401
            stranger = bearer(make_ec("ec-stranger-3"))["authorization"].encode()
            with pytest.raises(ConnectionRejected) as bad:
                async with open_websocket_url(
                    url, subprotocols=["mcp"], extra_headers=[(b"authorization", stranger)]
                ):
                    pass  # pragma: no cover
            assert bad.value.status_code == 401
            token = bearer(key)["authorization"].encode()
            async with open_websocket_url(
                url, subprotocols=["mcp"], extra_headers=[(b"authorization", token)]
            ) as ws:
                await ws.send_message(json.dumps(init_body()))
                assert "result" in json.loads(await ws.get_message())
                await ws.send_message(json.dumps(call(2, "add", a=1, b=2)))
                denied = json.loads(await ws.get_message())
                assert denied["id"] == 2 and denied["error"]["code"] == -32003
                assert denied["error"]["data"]["wwwAuthenticate"] == INSUFFICIENT
                await ws.send_message(json.dumps(call(3, "countdown", start=1)))
                ok = json.loads(await ws.get_message())
                assert ok["result"]["content"][0]["text"] == "liftoff"


async def test_handlers_see_the_principal_and_input_state_is_bound_to_it(
    config: AuthConfig, key: SigningKey
) -> None:
    app, _ = make_app()

    @app.tool
    async def whoami(ctx: Context) -> str:
        return f"{ctx.principal.subject}/{ctx.principal.client_id}"

    @app.tool
    async def confirm(ctx: Context) -> str:
        answer = await ctx.elicit("Sure?", {"type": "object", "properties": {}})
        return str(answer["action"])

    alice = bearer(key, sub="alice")
    mallory = bearer(key, sub="mallory")
    caps = {"elicitation": {}}
    with trio.fail_after(5):
        async with serving(app, auth=config) as address:
            # Handshake era: the session's principal.
            init = await request(address, "POST", headers=alice, body=init_body("2025-11-25"))
            session = {"mcp-session-id": init.headers["mcp-session-id"]}
            mine = await request(
                address, "POST", headers={**alice, **session}, body=call(2, "whoami")
            )
            assert mine.json()["result"]["content"][0]["text"] == "alice/client-7"
            # Modern era: each request's principal.
            body = modern(3, "tools/call", {"name": "whoami", "arguments": {}})
            hdrs = modern_headers("tools/call", "whoami")
            answer = await request(address, "POST", headers={**hdrs, **mallory}, body=body)
            assert answer.json()["result"]["content"][0]["text"] == "mallory/client-7"
            # requestState issued to alice is refused when mallory presents it.
            ask = modern(4, "tools/call", {"name": "confirm", "arguments": {}})
            ask["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = caps
            hdrs = modern_headers("tools/call", "confirm")
            first = (await request(address, "POST", headers={**hdrs, **alice}, body=ask)).json()
            assert first["result"]["resultType"] == "input_required"
            (input_key,) = first["result"]["inputRequests"]
            retry = dict(ask, id=5)
            retry["params"] = {
                **ask["params"],
                "inputResponses": {input_key: {"action": "accept", "content": {}}},
                "requestState": first["result"]["requestState"],
            }
            stolen = await request(address, "POST", headers={**hdrs, **mallory}, body=retry)
            assert stolen.json()["error"]["code"] == -32602
            assert "another principal" in stolen.json()["error"]["message"]
            own = await request(address, "POST", headers={**hdrs, **alice}, body=retry)
            assert own.json()["result"]["content"][0]["text"] == "accept"


async def test_websocket_closes_when_its_token_expires(config: AuthConfig, key: SigningKey) -> None:
    import time

    from trio_websocket import ConnectionClosed

    app, _ = make_app()
    # Valid now, expired in two seconds (the verifier's leeway applies to the upgrade only).
    token = key.sign(claims(exp=int(time.time()) + 2)).encode()
    with trio.fail_after(10):
        async with (
            serving(app, "ws", auth=config) as (host, port),
            open_websocket_url(
                f"ws://{host}:{port}/mcp",
                subprotocols=["mcp"],
                extra_headers=[(b"authorization", b"Bearer " + token)],
            ) as ws,
        ):
            await ws.send_message(json.dumps(init_body()))
            assert "result" in json.loads(await ws.get_message())
            await trio.sleep(max(0.0, int(time.time()) + 2.2 - time.time()) + 1.0)
            await ws.send_message(json.dumps(call(2, "countdown", start=1)))
            with pytest.raises(ConnectionClosed) as closed:
                await ws.get_message()
            assert closed.value.reason.code == 1008


async def test_deep_nesting_over_an_authenticated_websocket(
    config: AuthConfig, key: SigningKey, caplog: pytest.LogCaptureFixture
) -> None:
    """issue 16 item 1: the scope check reads a tools/call before the core does; nesting it
    cannot follow is left to the core's -32700, not a crash of the socket."""
    app, _ = make_app()
    deep = "[" * 5000 + "]" * 5000
    with trio.fail_after(10):
        async with serving(app, "ws", auth=config) as (host, port):
            token = bearer(key)["authorization"].encode()
            async with open_websocket_url(
                f"ws://{host}:{port}/mcp",
                subprotocols=["mcp"],
                extra_headers=[(b"authorization", token)],
            ) as ws:
                await ws.send_message(json.dumps(init_body()))
                assert "result" in json.loads(await ws.get_message())
                await ws.send_message(
                    '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"countdown",'
                    f'"arguments":{{"start":{deep}}}}}}}'
                )
                reply = json.loads(await ws.get_message())
                assert reply["id"] is None and reply["error"]["code"] == -32700, reply
                await ws.send_message(json.dumps(call(3, "countdown", start=1)))
                ok = json.loads(await ws.get_message())
                assert ok["result"]["content"][0]["text"] == "liftoff"
    assert "Traceback" not in caplog.text
