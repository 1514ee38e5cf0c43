"""Real peers for the scale-out tests: redis-server and HAProxy as subprocesses on free
loopback ports. Found on PATH; under CI=true a missing one fails the test (never a skip)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest


def find(program: str, package: str) -> str:
    found = shutil.which(program) or shutil.which(program, path="/usr/sbin:/usr/local/sbin")
    if found is None:
        message = f"{program} not found: install the Debian package {package} (.ci/run does)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_port(port: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.02)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout}s")


#: The Redis configuration docs/deploy.md gives (persistence: the append-only file).
REDIS_CONF = Path(__file__).parents[2] / "examples/deploy/redis.conf"


class RedisServer:
    """One redis-server as docs/deploy.md runs it (``examples/deploy/redis.conf``), on a
    loopback port, its append-only file in a directory of its own: ``stop`` (kill -9) and
    ``start`` again on the same port and directory are a restart that keeps what it held."""

    def __init__(self, port: int | None = None) -> None:
        self.binary = find("redis-server", "redis-server")
        self.port = port or free_port()
        self.dir = tempfile.mkdtemp(prefix="mcp-redis-")
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        self.process = subprocess.Popen(
            [
                self.binary, str(REDIS_CONF),
                "--port", str(self.port),
                "--bind", "127.0.0.1",
                "--dir", self.dir,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        wait_port(self.port)
        deadline = time.monotonic() + 10
        while self.command("PING") != b"+PONG\r\n":  # (-LOADING while it reads its file)
            assert time.monotonic() < deadline, "redis-server did not load its data in 10 s"
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        """Kill -9: what Redis acknowledged must be in its append-only file already."""
        if self.process is not None:
            self.process.kill()
            self.process.wait(10)
            self.process = None

    def command(self, *args: str) -> bytes:
        """One command on a connection of its own (the first reply line)."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=2) as sock:
            sock.sendall(b"*%d\r\n" % len(args))
            for arg in args:
                sock.sendall(b"$%d\r\n%b\r\n" % (len(arg.encode()), arg.encode()))
            return sock.recv(1000)

    def flush(self) -> None:
        with socket.create_connection(("127.0.0.1", self.port), timeout=2) as sock:
            sock.sendall(b"*1\r\n$8\r\nFLUSHALL\r\n")
            sock.recv(100)


def haproxy_config(port: int, backends: list[int], stats: Path) -> str:
    servers = "\n".join(
        f"    server r{i} 127.0.0.1:{p} check inter 500ms fall 1 rise 1"
        for i, p in enumerate(backends)
    )
    template = (Path(__file__).parents[2] / "examples/deploy/haproxy.cfg").read_text()
    # The example's frontend/backend, with test ports and a stats socket.
    return (
        template.replace("bind :8080", f"bind 127.0.0.1:{port}")
        .replace("stats socket /run/haproxy/admin.sock", f"stats socket {stats}")
        .split("    # servers")[0]
        + servers
        + "\n"
    )


def haproxy_stat(stats: Path) -> list[dict[str, str]]:
    """``show stat`` from HAProxy's stats socket, as rows."""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(str(stats))
        sock.sendall(b"show stat\n")
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    lines = data.decode().strip().splitlines()
    header = lines[0].lstrip("# ").split(",")
    return [dict(zip(header, line.split(","), strict=False)) for line in lines[1:]]
