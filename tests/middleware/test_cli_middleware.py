"""``mcp-runtime serve FILE --middleware module:obj`` (and MCP_RUNTIME_MIDDLEWARE), over a
real stdio subprocess."""

from __future__ import annotations

import trio

from ..peers import ROOT, cli, open_stdio_peer

QUICKSTART = ROOT / "examples" / "quickstart.py"


async def test_cli_middleware_list_over_stdio() -> None:
    with trio.fail_after(30):
        async with open_stdio_peer(
            QUICKSTART, "ndjson", "--middleware", "tests/middleware/cli_chain.py:chain"
        ) as (peer, _process, _err):
            await peer.initialize()
            args = {"name": "add", "arguments": {"a": 1, "b": 2}}
            first = await peer.call("tools/call", args)
            assert first["result"]["content"][0]["text"] == "3 (via cli middleware)"
            await peer.call("tools/call", args)
            refused = await peer.call("tools/call", args)
            assert refused["error"]["code"] == -32010
            assert refused["error"]["data"]["limit"] == "overall"


async def test_cli_middleware_from_the_environment() -> None:
    with trio.fail_after(30):
        async with open_stdio_peer(
            QUICKSTART,
            "ndjson",
            env={"MCP_RUNTIME_MIDDLEWARE": "tests.middleware.cli_chain:stamp"},
        ) as (peer, _process, _err):
            await peer.initialize()
            reply = await peer.call("tools/call", {"name": "add", "arguments": {"a": 2, "b": 2}})
            assert reply["result"]["content"][0]["text"] == "4 (via cli middleware)"


async def test_a_bad_middleware_spec_is_one_line_and_exit_2() -> None:
    with trio.fail_after(30):
        result = await trio.run_process(
            cli("serve", str(QUICKSTART), "--middleware", "tests.middleware.cli_chain:nothing"),
            capture_stderr=True,
            check=False,
            cwd=ROOT,
            stdin=b"",
        )
    assert result.returncode == 2
    err = result.stderr.decode().strip().splitlines()
    assert err == ["mcp-runtime: error: 'tests.middleware.cli_chain' has no 'nothing'"]
