"""Many clients at rest and one change to all of them.

Two shapes of an idle subscriber, each on its own fresh ``mcp-runtime serve --transport http``:

- handshake era (2025-11-25): a session (``initialize``, ``notifications/initialized``) with
  its standalone GET stream open (basic/transports "Listening for Messages from the Server"),
  the first ``fanout`` of them also ``resources/subscribe``-d to ``mem://blob``;
- modern era (2026-07-28): a ``subscriptions/listen`` POST whose SSE response stays open, the
  first ``fanout`` of them asking for ``resourceSubscriptions: ["mem://blob"]``.

Memory: the server's RSS growth per idle stream once all are open. Fan-out: the ``touch`` tool
calls ``notify_resource_updated("mem://blob")`` (once as a warm-up before the streams open,
then measured); the row is the time from sending that call
until the last subscriber's socket has ``notifications/resources/updated``, and the server CPU
over that interval. The session POSTs go over a few keep-alive connections; each stream holds
its own connection. Every wait is bounded. Server CPU is schedstat run time (nanoseconds,
every thread of the process tree), not 10 ms utime/stime ticks.
"""

from __future__ import annotations

import select
import socket
import subprocess
import sys
import time
from typing import Any

from . import _procfs as procfs
from . import _wire as wire

POST_CONNECTIONS = 8
UPDATED = b"notifications/resources/updated"


def serve_args(port: int, streams: int) -> list[str]:
    """Our CLI's arguments (after the command) for a server holding ``streams`` idle streams
    (``fanout_opcount`` runs the same under the bytecode counter)."""
    from .run import ours_http_args

    cap = str(streams + 100)  # (all from one loopback address: its share is the whole cap)
    return [
        *ours_http_args(port, "error"),
        "--max-connections",
        cap,
        "--max-connections-per-address",
        cap,
    ]


#: The floor contender (listen era only): ``servers/floor_fanout.py``, the same bytes on the
#: same sockets from a plain loop, one ``send`` each; what ours spends beyond it is ours.
FLOOR = "floor"


def _serve(contender: str, port: int, streams: int, log: Any) -> subprocess.Popen[bytes]:
    from .run import OURS, ROOT, SERVERS, _ours_cli, http_argv, server_env

    if contender == FLOOR:
        return subprocess.Popen(
            [sys.executable, str(SERVERS / "floor_fanout.py"), str(port)],
            cwd=str(ROOT),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )
    if contender != OURS:
        return subprocess.Popen(
            http_argv(contender, "http-sse", port),
            cwd=str(ROOT),
            env=server_env(contender),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )
    argv = [*_ours_cli(), *serve_args(port, streams)]
    return subprocess.Popen(
        argv, cwd=str(ROOT), env=server_env(OURS), stdin=subprocess.DEVNULL, stdout=log, stderr=log
    )


def _open_stream(port: int, request: bytes) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(request)
    return s


class _Watch:
    """Sockets registered with one epoll set, ready to read until each has a marker: set
    up before the change is sent, as a client that already waits on its streams is."""

    def __init__(self, socks: list[socket.socket]) -> None:
        self.ep = select.epoll(len(socks) + 1)
        self.by_fd: dict[int, socket.socket] = {}
        for s in socks:
            s.setblocking(False)
            fd = s.fileno()
            self.by_fd[fd] = s
            self.ep.register(fd, select.EPOLLIN)

    def collect(
        self, marker: bytes, deadline: float, read_at: list[float] | None = None
    ) -> tuple[int, float]:
        """Read every socket until each has ``marker``; (how many did, when the last did).

        A socket's time is when ``epoll_wait`` returned it readable with the bytes that
        completed its marker, not when this loop got round to reading it: one Python process
        reading 1,000 sockets spends microseconds on each, and stamping after the read would
        add the client's own pass over the sockets ahead of it to the server's figure. The
        bytes were in the socket by that moment, so the figure is still an upper bound of the
        true arrival, the same for every contender. ``read_at`` (if given) gets the time
        each was read, to show what a stamp after the read would add.
        """
        ep, by_fd = self.ep, self.by_fd
        seen = {fd: bytearray() for fd in by_fd}
        done = 0
        last = time.perf_counter()
        try:
            while done < len(by_fd) and time.perf_counter() < deadline:
                events = ep.poll(0.5, len(by_fd))
                stamp = time.perf_counter()
                for fd, _ in events:
                    try:
                        data = by_fd[fd].recv(65536)
                    except BlockingIOError:
                        continue
                    buf = seen[fd]
                    buf += data
                    if marker in buf or not data:
                        if data:
                            done += 1
                            last = stamp
                            if read_at is not None:
                                read_at.append(time.perf_counter())
                        ep.unregister(fd)
                        del buf[:]
        finally:
            ep.close()
        return done, last


def _await_all(
    socks: list[socket.socket], marker: bytes, deadline: float, read_at: list[float] | None = None
) -> tuple[int, float]:
    """Read every socket until each has ``marker``; (how many did, when the last did)."""
    return _Watch(socks).collect(marker, deadline, read_at)


def _sessions(port: int, n: int, fanout: int) -> list[str]:
    """``n`` initialized sessions, the first ``fanout`` subscribed to mem://blob."""
    posts = [wire.HttpClient(port, "/mcp", "session") for _ in range(POST_CONNECTIONS)]
    subscribe = wire._template("resources/subscribe", {"uri": "mem://blob"})
    ids = []
    try:
        for i in range(n):
            c = posts[i % POST_CONNECTIONS]
            c.session_id = None
            status, headers, body = c.exchange(wire.initialize(0))
            if status != 200 or "mcp-session-id" not in headers:
                raise wire.BenchError(f"initialize {i}: HTTP {status} {body[:200]!r}")
            c.session_id = headers["mcp-session-id"]
            c.exchange(wire.INITIALIZED)
            if i < fanout:
                status, _, body = c.exchange(subscribe % 1)
                if status != 200 or b'"result"' not in body:
                    raise wire.BenchError(f"resources/subscribe: HTTP {status} {body[:200]!r}")
            ids.append(c.session_id)
    finally:
        for c in posts:
            c.close()
    return ids


def _get_request(port: int, session_id: str) -> bytes:
    return (
        f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n"
        f"Mcp-Session-Id: {session_id}\r\nMCP-Protocol-Version: {wire.HANDSHAKE_VERSION}\r\n\r\n"
    ).encode()


def _listen_request(port: int, rid: int, subscribed: bool) -> bytes:
    wanted: dict[str, Any] = (
        {"resourceSubscriptions": ["mem://blob"]} if subscribed else {"toolsListChanged": True}
    )
    body = wire._template(
        "subscriptions/listen", {"notifications": wanted, "_meta": wire.MODERN_META}
    ) % (rid)
    c = wire.HttpClient(port, "/mcp", "modern")
    head = c.head(body, {"Mcp-Method": "subscriptions/listen"})
    c.close()
    return head + body


def _touch(port: int) -> None:
    c = wire.HttpClient(port, "/mcp", "modern", timeout=60)
    try:
        template = wire.call_template("touch", {}).replace(
            b'"arguments":{}', b'"arguments":{},"_meta":' + wire._json.encode(wire.MODERN_META)
        )
        headers = {"Mcp-Method": "tools/call", "Mcp-Name": "touch"}
        status, _, body = c.exchange(template % 1, headers)
        if status != 200 or b"touched" not in body:
            raise wire.BenchError(f"touch: HTTP {status} {body[:200]!r}")
    finally:
        c.close()


def measure(
    era: str, streams: int, fanout: int, log: Any, contender: str = "mcp-runtime"
) -> dict[str, Any]:
    """Open ``streams`` idle subscribers of ``era`` ('session' or 'listen'), then notify."""
    if contender == FLOOR and era != "listen":
        raise ValueError("the fan-out floor serves listen streams only")
    port = wire.free_port()
    proc = _serve(contender, port, streams, log)
    socks: list[socket.socket] = []
    try:
        wire.wait_for_port(port, 60, lambda: proc.poll() is None)
        # One call before anything is measured, nobody subscribed yet: a server's first
        # tools/call builds what every later one uses (ours: its typed-call decoder, 2 ms),
        # which is not the fan-out's cost; every contender gets the same warm-up.
        _touch(port)
        time.sleep(0.3)
        before = procfs.status_kib(proc.pid, "VmRSS")
        t = time.perf_counter()
        if era == "session":
            ids = _sessions(port, streams, fanout)
            socks = [_open_stream(port, _get_request(port, sid)) for sid in ids]
            ready, _ = _await_all(socks, b"\r\n\r\n", time.perf_counter() + 120)
        else:
            socks = [
                _open_stream(port, _listen_request(port, 10 + i, i < fanout))
                for i in range(streams)
            ]
            ready, _ = _await_all(socks, b"acknowledged", time.perf_counter() + 120)
        opened = time.perf_counter() - t
        if ready != streams:
            raise wire.BenchError(f"{ready} of {streams} {era} streams opened")
        time.sleep(1.0)
        after = procfs.status_kib(proc.pid, "VmRSS")
        cpu0 = procfs.run_seconds(proc.pid)
        watch = _Watch(socks[:fanout])
        client0 = time.process_time()
        t0 = time.perf_counter()
        _touch(port)
        read_at: list[float] = []
        got, last = watch.collect(UPDATED, time.perf_counter() + 60, read_at)
        client = time.process_time() - client0
        cpu = procfs.run_seconds(proc.pid) - cpu0
        read_ms = (max(read_at, default=last) - t0) * 1000
        if got != fanout:
            raise wire.BenchError(f"{got} of {fanout} subscribers got the update")
        return {
            "idle_kib": (after - before) / streams,
            "idle_note": f"{streams} {era} streams opened in {opened:.1f}s, RSS "
            f"{before / 1024:.1f}->{after / 1024:.1f} MiB",
            "fanout_ms": (last - t0) * 1000,
            "fanout_cpu_ms": cpu * 1000,
            "fanout_note": f"{fanout} subscribers of {streams} open streams (last read at "
            f"{read_ms:.1f} ms, client CPU {client * 1000:.1f} ms)",
            "fanout_read_ms": read_ms,
            "fanout_client_cpu_ms": client * 1000,
        }
    finally:
        for s in socks:
            s.close()
        wire.stop(proc, 10)
