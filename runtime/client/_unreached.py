"""Why a connection attempt failed, in a sentence a user can act on, and whether another
attempt in a moment could go differently.

What the socket layer raises is not that sentence: trio's ``open_tcp_stream`` tries every
address of a host and raises ``OSError("all attempts to connect to HOST:PORT failed")``
with the per-address errors grouped under it, and a TLS failure arrives as a
``BrokenResourceError`` around an ``SSLError``. A user needs "connection refused", not the
class names and reprs of that tree.

"Refused" here means the attempt was answered with a no, or that nothing is there to answer:
every address refused the connection (ECONNREFUSED: nothing listens on the port), the host
name does not exist (a resolver's "no such name", as opposed to its "try again"), a Unix
socket path that does not exist or is not a socket, a TLS certificate that does not verify
or a TLS handshake the server fails (no TLS server on that port).
None of these changes in the next second, so a client that never got through says so at
once; one that was connected before takes the same failure for an outage (a server
restarting) and retries (``TransportLost.refused``). Timeouts, resets and unreachable
networks are transient.
"""

from __future__ import annotations

import errno
import socket
import ssl

import trio

__all__ = ["connect_failure", "refused_status"]

#: Resolver errors that mean the name does not exist (not "try again later").
_NO_SUCH_NAME = frozenset(
    code
    for code in (
        getattr(socket, "EAI_NONAME", None),
        getattr(socket, "EAI_NODATA", None),
        getattr(socket, "EAI_FAIL", None),
    )
    if code is not None
)


def connect_failure(exc: BaseException, timeout: float) -> tuple[str, bool]:
    """(a plain reason, refused) for a failed connection attempt. ``timeout``: the attempt's
    bound, named when it was what ended the attempt."""
    if isinstance(exc, trio.TooSlowError):
        return f"no connection within {timeout:g} s", False
    if isinstance(exc, socket.gaierror):
        if exc.errno in _NO_SUCH_NAME:
            return "the host name does not resolve (no such host)", True
        return f"the host name could not be resolved ({exc.strerror or exc})", False
    tls = _tls_error(exc)
    if isinstance(tls, ssl.SSLCertVerificationError):
        return f"the server's TLS certificate is not trusted ({tls.verify_message})", True
    if isinstance(tls, (ssl.SSLEOFError, ssl.SSLZeroReturnError, ssl.SSLSyscallError)):
        return f"the connection was cut during the TLS handshake ({tls.reason or tls})", False
    if tls is not None:  # e.g. WRONG_VERSION_NUMBER: no TLS server on that port
        return f"the TLS handshake failed ({tls.reason or tls})", True
    leaves = _leaves(exc)
    if leaves and all(isinstance(leaf, ConnectionRefusedError) for leaf in leaves):
        return "connection refused (is the server running, and on this port?)", True
    if leaves and all(isinstance(leaf, FileNotFoundError) for leaf in leaves):
        return "no such socket (is the server running?)", True
    if leaves and all(_errno(leaf) == errno.ENOTSOCK for leaf in leaves):
        return "that path is not a socket", True
    leaf = leaves[0] if leaves else exc
    if isinstance(leaf, OSError) and leaf.strerror:
        return leaf.strerror[:1].lower() + leaf.strerror[1:], False
    return str(leaf) or type(leaf).__name__, False


def refused_status(status: int) -> bool:
    """An HTTP status that refuses a connection (an SSE stream, a WebSocket handshake) for
    good: a 4xx (404: nothing here; 401, 403: not for us), except 408 and 429, which ask
    for a later try. A 5xx may pass."""
    return 400 <= status < 500 and status not in (408, 429)


def _tls_error(exc: BaseException) -> ssl.SSLError | None:
    seen: BaseException | None = exc
    for _ in range(4):  # the SSLError is at most a cause or two down
        if seen is None:
            return None
        if isinstance(seen, ssl.SSLError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _leaves(exc: BaseException) -> list[BaseException]:
    """The per-address errors under trio's "all attempts ... failed", else ``exc`` itself."""
    cause = exc.__cause__
    if isinstance(cause, BaseExceptionGroup):
        found: list[BaseException] = []
        for inner in cause.exceptions:
            found.extend(_leaves(inner) if isinstance(inner, BaseExceptionGroup) else [inner])
        return found
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _errno(exc: BaseException) -> int | None:
    return exc.errno if isinstance(exc, OSError) else None
