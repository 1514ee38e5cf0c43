"""A load client that uses no MCP SDK: raw JSON-RPC over a child's pipes, raw HTTP/1.1, raw TCP.

One thread, ``selectors`` and pre-formatted request bytes: the client spends a few
microseconds per call, well under what any contender spends, so it is not the bottleneck.
Every loop here is bounded by a count and a deadline.
"""

from __future__ import annotations

import base64
import contextlib
import os
import selectors
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

HANDSHAKE_VERSION = "2025-11-25"
BATCH_VERSION = "2025-03-26"  # the one revision whose spec allows JSON-RPC batches
MODERN_VERSION = "2026-07-28"
ECHO_TEXT = "hello, benchmark"

_json = msgspec.json.Encoder()
_decode = msgspec.json.decode


class BenchError(Exception):
    """A contender misbehaved (no answer in time, died, wrong answer)."""


# -- request bytes ---------------------------------------------------------------------------


def initialize(request_id: int = 0, version: str = HANDSHAKE_VERSION) -> bytes:
    return _json.encode(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "initialize",
            "params": {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "mcp-bench", "version": "1.0"},
            },
        }
    )


INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "mcp-bench", "version": "1.0"},
}


def _template(method: str, params: dict[str, Any]) -> bytes:
    """b'{"jsonrpc":"2.0","id":%d,...}' ready for ``% request_id``."""
    body = _json.encode({"jsonrpc": "2.0", "id": 1234567, "method": method, "params": params})
    return body.replace(b"%", b"%%").replace(b'"id":1234567', b'"id":%d', 1)


def echo_template(modern: bool = False) -> bytes:
    params: dict[str, Any] = {"name": "echo", "arguments": {"text": ECHO_TEXT}}
    if modern:
        params["_meta"] = MODERN_META
    return _template("tools/call", params)


def read_template(modern: bool = False) -> bytes:
    params: dict[str, Any] = {"uri": "mem://blob"}
    if modern:
        params["_meta"] = MODERN_META
    return _template("resources/read", params)


def call_template(name: str, arguments: dict[str, Any]) -> bytes:
    return _template("tools/call", {"name": name, "arguments": arguments})


def discover(request_id: int) -> bytes:
    return _json.encode(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "server/discover",
            "params": {"_meta": MODERN_META},
        }
    )


def response_id(line: bytes) -> int | None:
    """The integer id of a response line, found without decoding the whole message."""
    at = line.find(b'"id":')
    if at < 0:
        return None
    at += 5
    end = at
    n = len(line)
    while end < n and line[end] in b"0123456789-":
        end += 1
    return int(line[at:end]) if end > at else None


def is_error(line: bytes) -> bool:
    # Our own payloads never contain the word, so a substring test is exact enough and cheap.
    return b'"error":' in line


def error_code(line: bytes) -> int | None:
    try:
        msg = _decode(line)
    except msgspec.DecodeError:
        return None
    if isinstance(msg, dict) and isinstance(msg.get("error"), dict):
        code = msg["error"].get("code")
        return code if isinstance(code, int) else None
    return None


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


@dataclass
class LoadResult:
    sent: int = 0
    ok: int = 0
    errors: int = 0
    elapsed: float = 0.0
    rtts_ns: list[int] = field(default_factory=list)
    error_codes: dict[int, int] = field(default_factory=dict)
    timed_out: bool = False

    @property
    def rate(self) -> float:
        return self.ok / self.elapsed if self.elapsed > 0 else 0.0

    def absorb(self, part: LoadResult) -> None:
        """Add ``part`` (a later slice of the same measurement) to this result."""
        self.sent += part.sent
        self.ok += part.ok
        self.errors += part.errors
        self.elapsed += part.elapsed
        self.rtts_ns += part.rtts_ns
        self.timed_out |= part.timed_out
        for code, count in part.error_codes.items():
            self.error_codes[code] = self.error_codes.get(code, 0) + count


# -- stdio -----------------------------------------------------------------------------------


class StdioPeer:
    """A server child process spoken to over its stdin/stdout, newline-delimited JSON."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        stderr_path: str | None = None,
    ) -> None:
        self._stderr = open(stderr_path or os.devnull, "ab")  # noqa: SIM115 - closed in close()
        self.spawned_at = time.perf_counter()
        self.proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            cwd=cwd,
            env=env,
            bufsize=0,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.wfd = self.proc.stdin.fileno()
        self.rfd = self.proc.stdout.fileno()
        os.set_blocking(self.wfd, False)
        os.set_blocking(self.rfd, False)
        self._sel = selectors.DefaultSelector()
        self._sel.register(self.rfd, selectors.EVENT_READ)
        self._buf = b""
        self._out = bytearray()
        self.next_id = 1

    @property
    def pid(self) -> int:
        return self.proc.pid

    def write(self, data: bytes) -> None:
        self._out += data
        self._flush()

    def _flush(self) -> None:
        while self._out:
            try:
                n = os.write(self.wfd, self._out)
            except BlockingIOError:
                return
            except BrokenPipeError as exc:
                raise BenchError("server closed its stdin") from exc
            del self._out[:n]

    def read_lines(self, timeout: float) -> list[bytes]:
        """Whatever complete lines arrive within ``timeout`` (at least one unless it expires)."""
        deadline = time.perf_counter() + timeout
        while True:
            if self._out:
                self._flush()
            try:
                data = os.read(self.rfd, 1 << 20)
            except BlockingIOError:
                data = None
            if data == b"":
                raise BenchError(f"server closed stdout (exit code {self.proc.poll()})")
            if data:
                self._buf += data
                if b"\n" in data:
                    *lines, self._buf = self._buf.split(b"\n")
                    return [line for line in lines if line.strip()]
                continue
            left = deadline - time.perf_counter()
            if left <= 0:
                return []
            if self._out:
                sel = selectors.DefaultSelector()
                sel.register(self.rfd, selectors.EVENT_READ)
                sel.register(self.wfd, selectors.EVENT_WRITE)
                sel.select(min(left, 0.05))
                sel.close()
            else:
                self._sel.select(left)

    def request(self, data: bytes, timeout: float = 30.0) -> bytes:
        """Send one message and return the next response line (skipping notifications)."""
        self.write(data + b"\n")
        deadline = time.perf_counter() + timeout
        while (left := deadline - time.perf_counter()) > 0:
            for line in self.read_lines(left):
                if b'"id"' in line:
                    return line
        raise BenchError(f"no answer within {timeout}s")

    def handshake(self, version: str = HANDSHAKE_VERSION, timeout: float = 60.0) -> bytes:
        reply = self.request(initialize(0, version), timeout)
        if is_error(reply):
            raise BenchError(f"initialize failed: {reply[:200]!r}")
        self.write(INITIALIZED + b"\n")
        return reply

    def load(
        self,
        template: bytes,
        *,
        total: int,
        depth: int,
        time_cap: float,
        drain_timeout: float = 15.0,
        per_write: int = 64,
    ) -> LoadResult:
        """Keep ``depth`` requests in flight until ``total`` are answered or ``time_cap`` passes."""
        res = LoadResult()
        first = self.next_id
        sent_at: list[int] = []
        clock = time.perf_counter_ns
        start = clock()
        stop_sending = start + int(time_cap * 1e9)
        hard_stop = stop_sending + int(drain_timeout * 1e9)
        in_flight = 0
        sent = 0
        done = 0
        rtts = res.rtts_ns
        while done < total or in_flight:
            now = clock()
            room = min(depth - in_flight, total - sent, per_write)
            if room > 0 and now < stop_sending:
                chunk = b"".join(template % (first + sent + i) + b"\n" for i in range(room))
                sent_at.extend([now] * room)
                sent += room
                in_flight += room
                self.write(chunk)
            elif now >= stop_sending and not in_flight:
                break
            if now > hard_stop:
                res.timed_out = True
                break
            lines = self.read_lines(0.5 if in_flight else 0.0)
            if not lines:
                continue
            now = clock()
            for line in lines:
                rid = response_id(line)
                if rid is None or rid < first:
                    continue  # a notification or a stray
                in_flight -= 1
                done += 1
                rtts.append(now - sent_at[rid - first])
                if is_error(line):
                    res.errors += 1
                    code = error_code(line)
                    if code is not None:
                        res.error_codes[code] = res.error_codes.get(code, 0) + 1
                else:
                    res.ok += 1
        res.elapsed = (clock() - start) / 1e9
        res.sent = sent
        self.next_id = first + sent
        return res

    def sequential(self, template: bytes, *, total: int, time_cap: float) -> LoadResult:
        return self.load(template, total=total, depth=1, time_cap=time_cap, per_write=1)

    def batch_probe(self, size: int, template: bytes, timeout: float) -> tuple[str, bytes | None]:
        """Send one batch; say what came back: 'answered', 'error ...', 'hang'."""
        first = self.next_id
        self.next_id += size
        items = b",".join(template % (first + i) for i in range(size))
        self.write(b"[" + items + b"]\n")
        deadline = time.perf_counter() + timeout
        while (left := deadline - time.perf_counter()) > 0:
            try:
                lines = self.read_lines(left)
            except BenchError as exc:
                return f"connection closed ({exc})", None
            for line in lines:
                if line.startswith(b"["):
                    replies = _decode(line)
                    good = sum(1 for r in replies if isinstance(r, dict) and "result" in r)
                    return ("answered" if good == size else f"answered {good}/{size}"), line
                if is_error(line):
                    return f"error {error_code(line)}", line
        return f"hang (no answer within {timeout:g}s)", None

    def batch_load(
        self,
        size: int,
        template: bytes,
        *,
        batches: int,
        depth: int,
        time_cap: float,
        drain_timeout: float = 15.0,
    ) -> LoadResult:
        """Pipelined batches: ``depth`` batches of ``size`` in flight; ok counts answered items."""
        res = LoadResult()
        clock = time.perf_counter_ns
        start = clock()
        stop_sending = start + int(time_cap * 1e9)
        hard_stop = stop_sending + int(drain_timeout * 1e9)
        in_flight = sent = 0
        while True:
            now = clock()
            if in_flight < depth and sent < batches and now < stop_sending:
                first = self.next_id
                self.next_id += size
                self.write(b"[" + b",".join(template % (first + i) for i in range(size)) + b"]\n")
                sent += 1
                in_flight += 1
                continue
            if not in_flight:
                break
            if now > hard_stop:
                res.timed_out = True
                break
            for line in self.read_lines(0.5):
                if line.startswith(b"["):
                    in_flight -= 1
                    n_err = line.count(b'"error":')
                    res.ok += line.count(b'"jsonrpc"') - n_err
                    res.errors += n_err
        res.elapsed = (clock() - start) / 1e9
        res.sent = sent * size
        return res

    def close(self, timeout: float = 3.0) -> None:
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
            self.proc.wait(timeout)
        except (subprocess.TimeoutExpired, OSError):
            self.proc.kill()
            self.proc.wait()
        finally:
            if self.proc.stdout:
                self.proc.stdout.close()
            self._sel.close()
            self._stderr.close()


# -- HTTP/1.1 --------------------------------------------------------------------------------


def parse_response(buf: bytes | bytearray) -> tuple[int, int, dict[str, str], bytes] | None:
    """(consumed, status, headers, body) once a whole response is in ``buf``; else None."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None
    head = bytes(buf[:end]).decode("latin-1").split("\r\n")
    status = int(head[0].split(" ", 2)[1])
    headers: dict[str, str] = {}
    for line in head[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    pos = end + 4
    if "content-length" in headers:
        n = int(headers["content-length"])
        if len(buf) - pos < n:
            return None
        return pos + n, status, headers, bytes(buf[pos : pos + n])
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = bytearray()
        while True:
            line_end = buf.find(b"\r\n", pos)
            if line_end < 0:
                return None
            size = int(bytes(buf[pos:line_end]).split(b";")[0], 16)
            if size == 0:
                trailer_end = buf.find(b"\r\n", line_end + 2)
                if trailer_end < 0:
                    return None
                return trailer_end + 2, status, headers, bytes(body)
            if len(buf) < line_end + 2 + size + 2:
                return None
            body += buf[line_end + 2 : line_end + 2 + size]
            pos = line_end + 2 + size + 2
    if status in (202, 204, 304) or 100 <= status < 200:
        return pos, status, headers, b""
    return None  # read-until-close bodies are not keep-alive; not used by any contender


def json_messages(headers: dict[str, str], body: bytes) -> list[Any]:
    """The JSON-RPC messages in a JSON or SSE response body."""
    if not body:
        return []
    if headers.get("content-type", "").startswith("text/event-stream"):
        out = []
        for event in body.replace(b"\r\n", b"\n").split(b"\n\n"):
            data = b"\n".join(
                line[5:].lstrip() for line in event.split(b"\n") if line.startswith(b"data:")
            )
            if data.strip():
                out.append(_decode(data))
        return out
    msg = _decode(body)
    return msg if isinstance(msg, list) else [msg]


class HttpClient:
    """One keep-alive connection; ``mode`` is 'modern' (2026-07-28), 'stateless' or 'session'."""

    def __init__(self, port: int, path: str, mode: str, timeout: float = 30.0) -> None:
        self.port = port
        self.path = path
        self.mode = mode
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.session_id: str | None = None
        self.version = MODERN_VERSION if mode == "modern" else HANDSHAKE_VERSION
        self.content_type = ""

    def head(self, body: bytes, extra: dict[str, str] | None = None) -> bytes:
        lines = [
            f"POST {self.path} HTTP/1.1",
            f"Host: 127.0.0.1:{self.port}",
            "Content-Type: application/json",
            "Accept: application/json, text/event-stream",
            f"MCP-Protocol-Version: {self.version}",
            f"Content-Length: {len(body)}",
        ]
        if self.session_id:
            lines.append(f"Mcp-Session-Id: {self.session_id}")
        for name, value in (extra or {}).items():
            lines.append(f"{name}: {value}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def exchange(
        self, body: bytes, extra: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        self.sock.sendall(self.head(body, extra) + body)
        while True:
            got = parse_response(self.buf)
            if got is not None:
                consumed, status, headers, rbody = got
                del self.buf[:consumed]
                return status, headers, rbody
            data = self.sock.recv(1 << 16)
            if not data:
                raise BenchError("server closed the connection")
            self.buf += data

    def handshake(self) -> None:
        if self.mode == "modern":
            return
        status, headers, body = self.exchange(initialize(0))
        if status != 200:
            raise BenchError(f"initialize: HTTP {status} {body[:200]!r}")
        self.session_id = headers.get("mcp-session-id")
        msgs = json_messages(headers, body)
        if not msgs or "result" not in msgs[0]:
            raise BenchError(f"initialize: {body[:200]!r}")
        self.version = msgs[0]["result"].get("protocolVersion", self.version)
        status, _, _ = self.exchange(INITIALIZED)
        if status not in (200, 202, 204):
            raise BenchError(f"notifications/initialized: HTTP {status}")

    def request_bytes(
        self, template: bytes, request_id: int, method: str, name: str | None
    ) -> bytes:
        body = template % request_id
        extra = {"Mcp-Method": method}
        if name:
            extra["Mcp-Name"] = name
        return self.head(body, extra if self.mode == "modern" else None) + body

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


def http_load(
    clients: list[HttpClient],
    template: bytes,
    *,
    total: int,
    time_cap: float,
    method: str = "tools/call",
    name: str | None = "echo",
    drain_timeout: float = 15.0,
) -> LoadResult:
    """Each keep-alive client sends its next request as soon as its previous answer is in."""
    res = LoadResult()
    sel = selectors.DefaultSelector()
    clock = time.perf_counter_ns
    start = clock()
    stop_sending = start + int(time_cap * 1e9)
    hard_stop = stop_sending + int(drain_timeout * 1e9)
    next_id = 1
    sent = 0
    busy = 0
    sent_at: dict[int, int] = {}
    content_types: set[str] = set()

    def fire(client: HttpClient) -> None:
        nonlocal next_id, sent, busy
        rid = next_id
        next_id += 1
        client.sock.sendall(client.request_bytes(template, rid, method, name))
        sent_at[id(client)] = clock()
        sent += 1
        busy += 1

    for client in clients:
        client.sock.setblocking(False)
        sel.register(client.sock, selectors.EVENT_READ, client)
    try:
        for client in clients:
            if sent < total:
                fire(client)
        while busy:
            now = clock()
            if now > hard_stop:
                res.timed_out = True
                break
            for key, _ in sel.select(0.5):
                client = key.data
                try:
                    data = client.sock.recv(1 << 16)
                except BlockingIOError:
                    continue
                if not data:
                    raise BenchError("server closed a keep-alive connection")
                client.buf += data
                while (got := parse_response(client.buf)) is not None:
                    consumed, status, headers, body = got
                    del client.buf[:consumed]
                    busy -= 1
                    t = clock()
                    res.rtts_ns.append(t - sent_at[id(client)])
                    content_types.add(headers.get("content-type", "").split(";")[0])
                    msgs = json_messages(headers, body) if status == 200 else []
                    if msgs and "result" in msgs[-1]:
                        res.ok += 1
                    else:
                        res.errors += 1
                        res.error_codes[status] = res.error_codes.get(status, 0) + 1
                    if sent < total and t < stop_sending:
                        fire(client)
    finally:
        sel.close()
        for client in clients:
            client.sock.setblocking(True)
    res.elapsed = (clock() - start) / 1e9
    res.sent = sent
    for client in clients:
        client.content_type = ",".join(sorted(content_types))
    return res


# -- raw TCP and WebSocket (idle-connection scale) -------------------------------------------


def open_idle_tcp(port: int, count: int, time_cap: float) -> tuple[list[socket.socket], int]:
    """Open ``count`` connections, initialize each (NDJSON), return them with the answer count."""
    socks: list[socket.socket] = []
    deadline = time.perf_counter() + time_cap
    msg = initialize(0) + b"\n" + INITIALIZED + b"\n"
    for _ in range(count):
        if time.perf_counter() > deadline:
            break
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(msg)
        socks.append(s)
    answered = _await_answers(socks, b"\n", deadline + 10)
    return socks, answered


def open_idle_ws(
    port: int, path: str, count: int, time_cap: float, refused: list[str]
) -> tuple[list[socket.socket], int]:
    """Open ``count`` WebSocket connections (RFC 6455 handshake by hand) and initialize each;
    stops at the first refusal (noted in ``refused``)."""
    socks: list[socket.socket] = []
    deadline = time.perf_counter() + time_cap
    payload = initialize(0)
    for _ in range(count):
        if time.perf_counter() > deadline:
            break
        try:
            s = _ws_connect(port, path)
        except (OSError, BenchError) as exc:
            if not socks:
                raise
            refused.append(f"refused after {len(socks)} connections: {exc}")
            break
        s.sendall(_ws_frame(payload))
        socks.append(s)
    answered = _await_answers(socks, b'"result"', deadline + 10)
    return socks, answered


def _ws_connect(port: int, path: str) -> socket.socket:
    if True:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        key = base64.b64encode(os.urandom(16)).decode()
        s.sendall(
            (
                f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                "Sec-WebSocket-Protocol: mcp\r\n\r\n"
            ).encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = s.recv(4096)
            if not chunk:
                raise BenchError("WebSocket handshake: connection closed")
            head += chunk
        status_line = head.split(b"\r\n", 1)[0]
        if b" 101 " not in status_line:
            raise BenchError(f"WebSocket handshake refused: {status_line!r}")
        return s


def _ws_frame(payload: bytes) -> bytes:
    mask = os.urandom(4)
    n = len(payload)
    head = bytes([0x81]) + (
        bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + n.to_bytes(2, "big")
    )
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def _await_answers(socks: list[socket.socket], marker: bytes, deadline: float) -> int:
    sel = selectors.DefaultSelector()
    for s in socks:
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ, bytearray())
    answered = 0
    try:
        while answered < len(socks) and time.perf_counter() < deadline:
            for key, _ in sel.select(0.5):
                try:
                    data = key.fileobj.recv(65536)  # type: ignore[union-attr]
                except BlockingIOError:
                    continue
                key.data.extend(data)
                if marker in key.data or not data:
                    answered += 1
                    sel.unregister(key.fileobj)
    finally:
        sel.close()
    return answered


def stop(proc: subprocess.Popen[bytes], grace: float) -> None:
    """End a server process: SIGTERM, then SIGKILL if it has not exited within ``grace``
    seconds."""
    proc.terminate()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, timeout: float, alive: Callable[[], bool]) -> None:
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        if not alive():
            raise BenchError("server exited before listening")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise BenchError(f"nothing listening on port {port} after {timeout}s")
