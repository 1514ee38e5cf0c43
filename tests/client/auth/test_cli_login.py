"""``mcp-runtime login URL``, then ``call``, then ``logout``, as a new user would run them
(real subprocesses), against the real OpenID provider protecting examples/oauth_notes.py.
The browser step is driven headlessly from the URL the login prints."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import trio

from runtime.client import FileTokenStore, LoopbackLogin, OAuth, open_client

from .headless import HeadlessBrowser
from .oidc_provider import SERVICE_CLIENT, SERVICE_SECRET, protected_notes, refresh_status

CLI = [sys.executable, "-m", "runtime"]


def environment(config: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "XDG_CONFIG_HOME": str(config), **extra}
    env.pop("MCP_RUNTIME_BEARER_TOKEN", None)
    env.pop("MCP_RUNTIME_CLIENT_SECRET", None)
    return env


async def run(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    return await trio.run_process(
        [*CLI, *argv], env=env, capture_stdout=True, capture_stderr=True, check=False
    )


async def test_login_call_logout(tmp_path: Path) -> None:
    env = environment(tmp_path)
    with trio.fail_after(90):
        async with protected_notes() as (url, provider):
            # Before any login: the call fails with the authorization exit status.
            before = await run("call", url, "whoami", env=env)
            assert before.returncode == 4, before.stderr
            assert b"mcp-runtime login" in before.stderr

            login = await trio.lowlevel.open_process(
                [*CLI, "login", url, "--no-browser"], env=env, stdout=-1, stderr=-1
            )
            assert login.stderr is not None and login.stdout is not None
            printed = b""
            while b"/auth?" not in printed or not printed.endswith(b"\n"):
                chunk = await login.stderr.receive_some(4096)
                assert chunk, printed
                printed += chunk
            authorization_url = next(
                line.strip() for line in printed.decode().splitlines() if "/auth?" in line
            )
            await HeadlessBrowser()(authorization_url)
            assert await login.wait() == 0
            said = await login.stdout.receive_some(4096)
            assert said.strip() == f"logged in to {url}".encode()

            store = FileTokenStore(tmp_path / "mcp-runtime" / "oauth")
            stored = store.path_for(url)
            assert stat.S_IMODE(stored.stat().st_mode) == 0o600
            assert stat.S_IMODE(stored.parent.stat().st_mode) == 0o700
            entry = await store.load(url)
            assert entry is not None and entry.tokens is not None
            token = entry.tokens.access_token.encode()
            assert token not in printed  # nothing of the token on the terminal

            called = await run("call", url, "whoami", "--log-level", "debug", env=env)
            assert called.returncode == 0, called.stderr
            assert b"user-42" in called.stdout
            assert token not in called.stdout + called.stderr

            # The bridge serves the protected server over stdio with the stored login.
            bridge = [*CLI, "serve", url, "--transport", "stdio"]
            async with open_client(bridge, env=env, timeout=30) as client:
                me = await client.call_tool("whoami", {})
                assert me.structured_content["subject"] == "user-42"

            entry = await store.load(url)
            assert entry is not None and entry.tokens is not None and entry.client is not None
            refresh = entry.tokens.refresh_token
            assert refresh is not None
            out = await run("logout", url, env=env)
            assert out.returncode == 0 and out.stdout.strip() == f"logged out of {url}".encode()
            assert not stored.exists()
            # The refresh token was revoked too (RFC 7009): a copy of the file is of no use.
            status = await trio.to_thread.run_sync(
                refresh_status, provider, refresh, entry.client.client_id
            )
            assert status == 400
            after = await run("call", url, "whoami", env=env)
            assert after.returncode == 4


async def test_login_with_client_credentials_from_the_environment(tmp_path: Path) -> None:
    env = environment(tmp_path, SERVICE_SECRET_VAR=SERVICE_SECRET)
    with trio.fail_after(60):
        async with protected_notes() as (url, _provider):
            login = await run(
                "login", url, "--client-credentials", "--client-id", SERVICE_CLIENT,
                "--client-secret-env", "SERVICE_SECRET_VAR", "--scope", "notes:read",
                env=env,
            )  # fmt: skip
            assert login.returncode == 0, login.stderr
            called = await run("call", url, "whoami", "--json", env=env)
            assert called.returncode == 0, called.stderr
            assert SERVICE_CLIENT.encode() in called.stdout


def test_docs_name_every_login_flag() -> None:
    from runtime.cli._login import _parser

    docs = (Path(__file__).parents[3] / "docs" / "cli.md").read_text()
    section = docs[docs.index("### Logging in to a protected server") :]
    for command in ("login", "logout"):
        for action in _parser(command)._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert f"`{option}" in docs, (command, option)
    assert "exit 4" in section


async def test_the_bridge_keeps_refreshing_its_upstream_login(tmp_path: Path) -> None:
    env = environment(tmp_path)
    store = FileTokenStore(tmp_path / "mcp-runtime" / "oauth")
    with trio.fail_after(90):
        async with protected_notes(token_ttl=2) as (url, _provider):
            login = OAuth(login=LoopbackLogin(open_browser=HeadlessBrowser()), store=store)
            await login.login_to(url)
            first = (await store.load(url)).tokens  # type: ignore[union-attr]
            assert first is not None and first.refresh_token
            bridge = [*CLI, "serve", url, "--transport", "stdio"]
            async with open_client(bridge, env=env, timeout=30) as client:
                for _ in range(3):  # each call past the last token's expiry
                    me = await client.call_tool("whoami", {})
                    assert me.structured_content["subject"] == "user-42"
                    await trio.sleep(2.2)
                latest = (await store.load(url)).tokens  # type: ignore[union-attr]
            assert latest is not None and latest.access_token != first.access_token
            assert latest.refresh_token != first.refresh_token  # refreshed (and rotated)
