"""Three replicas behind HAProxy (round-robin, no stickiness) sharing the authorization
server's state in a real Redis: every step of a login may land on another replica."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
import trio

from runtime.authserver._pkce import make_pair
from tests.stores.cluster import HERE as STORES
from tests.stores.cluster import ROOT, Cluster
from tests.stores.servers import RedisServer, wait_port

from .browser import Browser
from .helpers import Served, form_post, mcp_status, query_of, redeem, register
from .provider import CLIENT_ID, CLIENT_SECRET, open_provider
from .test_oidc_upstream import provider_login

pytestmark = pytest.mark.trio

EXAMPLE = ROOT / "examples" / "oauth_server.py"


class LoginCluster(Cluster):
    """The cluster of tests/stores, serving examples/oauth_server.py with --auth oidc."""

    issuer = ""

    def start_replica(self, i: int) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "UPSTREAM_SECRET": CLIENT_SECRET}
        log = (self.dir / f"r{i}.log").open("ab")
        self.procs[i] = subprocess.Popen(
            [
                sys.executable, "-m", "runtime", "serve", str(EXAMPLE),
                "--transport", "http", "--port", str(self.ports[i]),
                "--store", self.redis_url,
                "--auth", "oidc", "--issuer", self.issuer, "--client-id", CLIENT_ID,
                "--client-secret-env", "UPSTREAM_SECRET",
                "--public-url", f"http://127.0.0.1:{self.port}",
            ],
            env=env,
            stdout=log,
            stderr=log,
        )  # fmt: skip
        wait_port(self.ports[i], 30)


@pytest.fixture
def redis() -> Iterator[RedisServer]:
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.stop()


async def test_a_login_across_three_replicas_on_redis(redis: RedisServer) -> None:
    assert STORES.is_dir()
    cluster = LoginCluster(redis.url)
    with trio.fail_after(120):
        async with open_provider(f"http://127.0.0.1:{cluster.port}/callback") as issuer:
            cluster.issuer = issuer
            await trio.to_thread.run_sync(cluster.start)
            try:
                base = f"http://127.0.0.1:{cluster.port}"
                served = Served(("127.0.0.1", cluster.port), base, None)  # type: ignore[arg-type]
                provider_port = int(issuer.rsplit(":", 1)[1])
                # Registration, consent, callback and token each go to whichever replica
                # HAProxy picks next.
                client = await register(served)
                browser = Browser({cluster.port, provider_port})
                verifier, challenge = make_pair()
                from .helpers import authorize_url

                back = await provider_login(
                    browser, authorize_url(served, client["client_id"], challenge), "frank"
                )
                params = query_of(back)
                assert params["iss"] == base
                tokens = (
                    await redeem(served, client["client_id"], params["code"], verifier)
                ).json()
                assert "access_token" in tokens, tokens
                # Every replica takes the token (the same signing key for all).
                for _ in range(3):
                    assert (await mcp_status(served, tokens["access_token"])).status == 200
                # Refresh rotation and reuse detection across replicas.
                fields = {
                    "grant_type": "refresh_token",
                    "refresh_token": tokens["refresh_token"],
                    "client_id": client["client_id"],
                }
                assert (await form_post(served, "/token", fields)).status == 200
                assert (await form_post(served, "/token", fields)).json()[
                    "error"
                ] == "invalid_grant"
                for _ in range(3):
                    assert (await mcp_status(served, tokens["access_token"])).status == 401
                # The code was used once, across all replicas (its reuse found and refused).
                again = await redeem(served, client["client_id"], params["code"], verifier)
                assert again.json()["error"] == "invalid_grant"
            except BaseException:
                print(cluster.logs())
                raise
            finally:
                await trio.to_thread.run_sync(cluster.stop)
