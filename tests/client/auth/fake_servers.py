"""A scriptable authorization server and resource in one raw HTTP/1.1 server on loopback,
for the tests where the point is what a hostile or broken one sends; and a login that
answers the authorization request itself (no browser), as a scripted user would."""

from __future__ import annotations

import dataclasses
import functools
import json
import urllib.parse
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import trio

Reply = tuple[int, dict[str, str], bytes]
Route = Callable[["Request"], Reply | None]


@dataclasses.dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes

    def form(self) -> dict[str, str]:
        return dict(urllib.parse.parse_qsl(self.body.decode()))


def json_reply(document: Any, status: int = 200, **headers: str) -> Reply:
    return status, {"content-type": "application/json", **headers}, json.dumps(document).encode()


NOT_FOUND: Reply = (404, {"content-type": "text/plain"}, b"not found")


class FakeAuth:
    """One origin playing the MCP server's metadata and the authorization server.
    ``routes``: path -> function (a Request to a reply, None: 404). ``seen``: every request."""

    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.seen: list[Request] = []
        self.origin = ""
        self.tokens_issued = 0

    def standard(self, *, resource: str | None = None, **metadata: Any) -> None:
        """A well-behaved server: PRM at the path-aware URL, RFC 8414 metadata, DCR and a
        token endpoint handing out numbered tokens."""
        origin = self.origin
        prm = {"resource": resource or f"{origin}/mcp", "authorization_servers": [origin]}
        document = {
            "issuer": origin,
            "authorization_endpoint": f"{origin}/authorize",
            "token_endpoint": f"{origin}/token",
            "registration_endpoint": f"{origin}/register",
            "code_challenge_methods_supported": ["S256"],
            **metadata,
        }
        self.routes["/.well-known/oauth-protected-resource/mcp"] = lambda r: json_reply(prm)
        self.routes["/.well-known/oauth-authorization-server"] = lambda r: json_reply(document)
        self.routes["/register"] = lambda r: json_reply({"client_id": "registered-1"}, 201)
        self.routes["/token"] = self.token

    def token(self, request: Request) -> Reply:
        self.tokens_issued += 1
        return json_reply(
            {
                "access_token": f"token-{self.tokens_issued}",
                "token_type": "Bearer",
                "expires_in": 3600,
                "refresh_token": f"refresh-{self.tokens_issued}",
            }
        )

    def paths(self) -> list[str]:
        return [f"{r.method} {r.path}" for r in self.seen]

    async def _handle(self, stream: trio.SocketStream) -> None:
        data = b""
        with trio.move_on_after(10):
            while b"\r\n\r\n" not in data:
                chunk = await stream.receive_some(65536)
                if not chunk:
                    return
                data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, target, _ = lines[0].split(" ")
            headers = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            length = int(headers.get("content-length", "0"))
            while len(body) < length:
                body += await stream.receive_some(65536)
            parts = urllib.parse.urlsplit(target)
            request = Request(
                method, parts.path, dict(urllib.parse.parse_qsl(parts.query)), headers, body
            )
            self.seen.append(request)
            route = self.routes.get(parts.path)
            reply = route(request) if route is not None else None
            status, reply_headers, reply_body = reply if reply is not None else NOT_FOUND
            if status == 0:  # a route that never answers
                await trio.sleep_forever()
            out = [f"HTTP/1.1 {status} X"]
            out += [f"{k}: {v}" for k, v in reply_headers.items()]
            out += [f"Content-Length: {len(reply_body)}", "Connection: close", "", ""]
            await stream.send_all("\r\n".join(out).encode("latin-1") + reply_body)
        await stream.aclose()


@asynccontextmanager
async def fake_auth() -> AsyncIterator[FakeAuth]:
    fake = FakeAuth()
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            functools.partial(trio.serve_tcp, fake._handle, 0, host="127.0.0.1")
        )
        port = listeners[0].socket.getsockname()[1]
        fake.origin = f"http://127.0.0.1:{port}"
        yield fake
        nursery.cancel_scope.cancel()


class ScriptedLogin:
    """A :class:`runtime.client.Login` whose user approves at once: the redirect carries a
    code, our state and ``iss`` (``iss=None``: none; ``extra``: more parameters)."""

    def __init__(self, iss: str | None = None, extra: Mapping[str, str] | None = None) -> None:
        self.iss = iss
        self.extra = dict(extra or {})
        self.urls: list[str] = []

    @asynccontextmanager
    async def redirect(self) -> AsyncIterator[ScriptedLogin]:
        yield self

    uri = "http://127.0.0.1:1/callback"

    async def wait(self, authorization_url: str, state: str) -> Mapping[str, str]:
        self.urls.append(authorization_url)
        params = {"code": "the-code", "state": state, **self.extra}
        if self.iss is not None:
            params["iss"] = self.iss
        return params
