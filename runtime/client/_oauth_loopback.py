"""Interactive login: the user's browser visits the authorization endpoint and comes back
to a redirect listener on the loopback interface (RFC 8252 7.3, OAuth 2.1 8.4.2).

The listener binds ``127.0.0.1`` (never every interface, never ``localhost``, which may
resolve elsewhere: RFC 8252 8.3) on a free port, and the redirect URI names that exact port
and path. It answers only ``GET`` on that path with our ``state``, once: anything else gets
a 404 or 400 and the listener keeps waiting; the matching request ends the wait and the
listener is closed. The wait is bounded (``timeout``, :data:`DEFAULT_LOGIN_TIMEOUT`).

The URL is printed on stderr (it holds no secret: the PKCE challenge, not the verifier) and
the system browser is opened where there is one; ``open_browser`` may instead be a function
that takes the user there (a test driving the login headlessly, a GUI).
"""

from __future__ import annotations

import contextlib
import sys
import urllib.parse
import webbrowser
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Final, Protocol

import trio

from ._auth import AuthorizationFailed

__all__ = [
    "DEFAULT_LOGIN_TIMEOUT",
    "Login",
    "LoopbackLogin",
    "Redirect",
]

#: Seconds the user has to log in (``LoopbackLogin(timeout=)``): time to read a consent
#: page and type a password with a second factor, not an afternoon.
DEFAULT_LOGIN_TIMEOUT: Final = 300.0
#: Largest request head the listener reads (a browser's redirect is well under 8 KiB).
_MAX_HEAD: Final = 16 * 1024
#: Seconds one connection to the listener may take to send its request head.
_HEAD_TIMEOUT: Final = 10.0
_PAGE: Final = (
    b"<!doctype html><meta charset=utf-8><title>Logged in</title>"
    b"<p>You are logged in. You can close this tab.</p>"
)


class Redirect(Protocol):
    """One authorization request's way back: ``uri`` is the redirect URI to register and
    send; ``wait`` takes the user to ``authorization_url`` and returns the query parameters
    of the redirect that carries ``state``."""

    uri: str

    async def wait(self, authorization_url: str, state: str) -> Mapping[str, str]: ...


class Login(Protocol):
    """How a user logs in: opens a :class:`Redirect` for one authorization request."""

    def redirect(self) -> AbstractAsyncContextManager[Redirect]: ...


class LoopbackLogin:
    """A :class:`Login` through the system browser and a loopback listener (see the module
    docstring). ``port``: 0 for a free one (RFC 8252 7.3: the authorization server must
    accept any port on a loopback redirect URI); ``path``: the redirect URI's path.
    ``open_browser``: True (the system browser), False (print the URL only), or an async
    function given the URL. ``announce``: where the URL is printed (default: stderr)."""

    def __init__(
        self,
        *,
        port: int = 0,
        path: str = "/callback",
        timeout: float = DEFAULT_LOGIN_TIMEOUT,
        open_browser: bool | Callable[[str], Awaitable[None]] = True,
        announce: Callable[[str], None] | None = None,
    ) -> None:
        if not path.startswith("/"):
            raise ValueError(f"path must start with '/', not {path!r}")
        if not timeout > 0:
            raise ValueError(f"timeout must be a number of seconds > 0, not {timeout!r}")
        self.port = port
        self.path = path
        self.timeout = timeout
        self.open_browser = open_browser
        self.announce = announce or _to_stderr

    @asynccontextmanager
    async def redirect(self) -> AsyncIterator[Redirect]:
        sock = trio.socket.socket(trio.socket.AF_INET, trio.socket.SOCK_STREAM)
        try:
            await sock.bind(("127.0.0.1", self.port))
            sock.listen(8)
        except OSError as exc:
            sock.close()
            raise AuthorizationFailed(
                f"cannot listen for the login redirect on 127.0.0.1:{self.port}: {exc}"
            ) from None
        listener = trio.SocketListener(sock)
        try:
            yield _LoopbackRedirect(self, listener, sock.getsockname()[1])
        finally:
            await listener.aclose()


def _to_stderr(url: str) -> None:
    print(f"Open this URL in a browser to log in:\n  {url}", file=sys.stderr, flush=True)


class _LoopbackRedirect:
    def __init__(self, login: LoopbackLogin, listener: trio.SocketListener, port: int) -> None:
        self._login = login
        self._listener = listener
        self.uri = f"http://127.0.0.1:{port}{login.path}"
        self._result: dict[str, str] | None = None

    async def wait(self, authorization_url: str, state: str) -> Mapping[str, str]:
        login = self._login
        login.announce(authorization_url)
        with trio.move_on_after(login.timeout):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._serve, state, nursery.cancel_scope)
                await self._open(authorization_url)
        if self._result is None:
            raise AuthorizationFailed(f"no login within {login.timeout:g} s")
        return self._result

    async def _open(self, url: str) -> None:
        opener = self._login.open_browser
        if opener is True:
            with contextlib.suppress(Exception):  # no browser here: the URL is printed
                await trio.to_thread.run_sync(webbrowser.open, url)
        elif opener:
            await opener(url)

    async def _serve(self, state: str, done: trio.CancelScope) -> None:
        async with trio.open_nursery() as nursery:
            while self._result is None:
                stream = await self._listener.accept()
                nursery.start_soon(self._answer, stream, state, done)

    async def _answer(self, stream: trio.abc.Stream, state: str, done: trio.CancelScope) -> None:
        async with stream:
            with contextlib.suppress(trio.BrokenResourceError, trio.TooSlowError, OSError):
                with trio.fail_after(_HEAD_TIMEOUT):
                    head = await _read_head(stream)
                status, params = self._judge(head, state)
                body = _PAGE if status == 200 else f"HTTP {status}\n".encode()
                await stream.send_all(
                    f"HTTP/1.1 {status} {'OK' if status == 200 else 'Refused'}\r\n"
                    f"Content-Type: text/{'html' if status == 200 else 'plain'}; charset=utf-8\r\n"
                    f"Content-Length: {len(body)}\r\nConnection: close\r\n"
                    "Cache-Control: no-store\r\n\r\n".encode("ascii")
                    + body
                )
                if params is not None and self._result is None:
                    self._result = params
                    done.cancel()

    def _judge(self, head: bytes | None, state: str) -> tuple[int, dict[str, str] | None]:
        if head is None:
            return 400, None
        line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = line.split(" ")
        if len(parts) != 3 or parts[0] != "GET" or not parts[2].startswith("HTTP/1."):
            return 400, None
        target = urllib.parse.urlsplit(parts[1])
        if target.path != self._login.path:
            return 404, None
        params = dict(urllib.parse.parse_qsl(target.query, keep_blank_values=True))
        if params.get("state") != state:
            return 400, None
        return 200, params


async def _read_head(stream: trio.abc.Stream) -> bytes | None:
    data = bytearray()
    while b"\r\n\r\n" not in data:
        if len(data) > _MAX_HEAD:
            return None
        chunk = await stream.receive_some(4096)
        if not chunk:
            return None
        data += chunk
    return bytes(data)
