"""A stand-in for GitHub's OAuth app endpoints on loopback (GitHub itself is not reachable
from tests): the authorize redirect of a person who already approved the app, the token
endpoint with PKCE S256 (errors as 200 with an ``error`` member, as GitHub answers), and
``GET /user``. Served with h11 over trio sockets."""

from __future__ import annotations

import base64
import hashlib
import secrets
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import h11
import msgspec
import trio

CLIENT_ID = "Iv1.standin"
CLIENT_SECRET = "standin-secret"
USER = {"id": 4242, "login": "octocat"}


class GitHubStandIn:
    def __init__(self) -> None:
        self.codes: dict[str, tuple[str, str]] = {}  # code -> (challenge, redirect_uri)
        self.tokens: set[str] = set()
        self.user_calls = 0

    def answer(
        self, method: str, target: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        parts = urlsplit(target)
        if parts.path == "/login/oauth/authorize" and method == "GET":
            query = dict(parse_qsl(parts.query))
            assert query["client_id"] == CLIENT_ID and query["code_challenge_method"] == "S256"
            code = secrets.token_hex(10)
            self.codes[code] = (query["code_challenge"], query["redirect_uri"])
            location = (
                f"{query['redirect_uri']}?{urlencode({'code': code, 'state': query['state']})}"
            )
            return 302, [("location", location)], b""
        if parts.path == "/login/oauth/access_token" and method == "POST":
            form = dict(parse_qsl(body.decode()))
            entry = self.codes.pop(form.get("code", ""), None)
            digest = hashlib.sha256(form.get("code_verifier", "").encode()).digest()
            challenge = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
            if (
                entry is None
                or form.get("client_secret") != CLIENT_SECRET
                or challenge != entry[0]
                or form.get("redirect_uri") != entry[1]
            ):
                return 200, [], msgspec.json.encode({"error": "bad_verification_code"})
            token = "gho_" + secrets.token_hex(10)
            self.tokens.add(token)
            answer = {"access_token": token, "token_type": "bearer", "scope": "read:user"}
            return 200, [], msgspec.json.encode(answer)
        if parts.path == "/user" and method == "GET":
            self.user_calls += 1
            token = headers.get("authorization", "").removeprefix("Bearer ")
            if token not in self.tokens:
                return 401, [], b'{"message":"Bad credentials"}'
            return 200, [], msgspec.json.encode(USER)
        return 404, [], b"{}"

    async def serve(self, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        task_status.started(listeners[0].socket.getsockname()[1])
        await trio.serve_listeners(self._connection, listeners)

    async def _connection(self, stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        async with stream:
            request: h11.Request | None = None
            body = b""
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    data = await stream.receive_some(65536)
                    if not data:
                        return
                    conn.receive_data(data)
                elif isinstance(event, h11.Request):
                    request = event
                elif isinstance(event, h11.Data):
                    body += event.data
                elif isinstance(event, h11.EndOfMessage):
                    assert request is not None
                    headers = {k.decode().lower(): v.decode() for k, v in request.headers}
                    status, extra, payload = self.answer(
                        request.method.decode(), request.target.decode(), headers, body
                    )
                    response = h11.Response(
                        status_code=status,
                        headers=[
                            *extra,
                            ("content-type", "application/json"),
                            ("content-length", str(len(payload))),
                            ("connection", "close"),
                        ],
                    )
                    await stream.send_all(
                        conn.send(response)
                        + conn.send(h11.Data(data=payload))
                        + conn.send(h11.EndOfMessage())
                    )
                    return
                else:
                    return
