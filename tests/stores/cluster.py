"""Three ``mcp-runtime serve`` replicas on one redis-server behind HAProxy (round-robin per
request, no stickiness): the deployment of docs/deploy.md, on loopback ports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

from .servers import find, free_port, haproxy_config, haproxy_stat, wait_port

HERE = Path(__file__).parent
ROOT = HERE.parents[1]


class Cluster:
    """``store_options``: a query for the replicas' ``--store`` URL (``?lease=1.5``: a short
    lease, so that a test sees a dead replica's work end within seconds)."""

    def __init__(self, redis_url: str, replicas: int = 3, store_options: str = "") -> None:
        self.redis_url = redis_url
        self.store_options = store_options
        self.ports = [free_port() for _ in range(replicas)]
        self.procs: list[subprocess.Popen[bytes] | None] = [None] * replicas
        self.haproxy_binary = find("haproxy", "haproxy")
        self.dir = Path(tempfile.mkdtemp(prefix="mcp-cluster-"))
        self.stats = self.dir / "stats.sock"
        self.port = free_port()
        self.haproxy: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start_replica(self, i: int) -> None:
        env = {**os.environ, "REPLICA_NAME": f"r{i}", "PYTHONPATH": str(ROOT)}
        log = (self.dir / f"r{i}.log").open("ab")
        self.procs[i] = subprocess.Popen(
            [
                sys.executable, "-m", "runtime", "serve", str(HERE / "replica_app.py"),
                "--transport", "http", "--port", str(self.ports[i]),
                "--store", self.redis_url + self.store_options,
                "--log-level", os.environ.get("CLUSTER_LOG_LEVEL", "info"),
            ],
            env=env,
            stdout=log,
            stderr=log,
        )  # fmt: skip
        wait_port(self.ports[i], 30)

    def kill_replica(self, i: int) -> None:
        proc = self.procs[i]
        assert proc is not None
        proc.kill()
        proc.wait(10)
        self.procs[i] = None

    def start(self) -> Cluster:
        for i in range(len(self.ports)):
            self.start_replica(i)
        config = self.dir / "haproxy.cfg"
        config.write_text(haproxy_config(self.port, self.ports, self.stats))
        self.haproxy = subprocess.Popen(
            [self.haproxy_binary, "-f", str(config), "-db"],
            stdout=(self.dir / "haproxy.log").open("ab"),
            stderr=subprocess.STDOUT,
        )
        wait_port(self.port)
        self.wait_up(len(self.ports))
        return self

    def servers(self) -> list[dict[str, str]]:
        return [
            row
            for row in haproxy_stat(self.stats)
            if row["pxname"] == "replicas" and row["svname"] not in ("BACKEND", "FRONTEND")
        ]

    def backend(self) -> dict[str, str]:
        return next(
            row
            for row in haproxy_stat(self.stats)
            if row["pxname"] == "replicas" and row["svname"] == "BACKEND"
        )

    def wait_up(self, count: int, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                up = sum(row["status"].startswith("UP") for row in self.servers())
            except (FileNotFoundError, ConnectionRefusedError):
                up = 0  # HAProxy has not opened its stats socket yet (a loaded machine)
            if up >= count:
                return
            time.sleep(0.1)
        raise TimeoutError(f"HAProxy sees fewer than {count} replicas up: {self.servers()}")

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-4000:]}"
            for p in sorted(self.dir.glob("*.log"))
        )

    def stop(self) -> None:
        for proc in [*self.procs, self.haproxy]:
            if proc is not None and proc.poll() is None:
                proc.terminate()
        for proc in [*self.procs, self.haproxy]:
            if proc is not None:
                try:
                    proc.wait(15)
                except subprocess.TimeoutExpired:
                    proc.kill()


async def run_sdk_client(script: str, url: str) -> Any:
    """Run one of this folder's official-SDK client scripts against ``url`` (a subprocess,
    60 s at most); its JSON report from stdout."""
    with trio.fail_after(60):
        done = await trio.run_process(
            [sys.executable, str(HERE / script), url],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    return json.loads(done.stdout)
