"""Our own server as a proxy's remote, served by ``mcp-runtime serve`` in its own process
(tests/bridge/test_bridge_cli.py kills and restarts it)."""

from runtime import Server

app = Server("own-upstream", "1.0.0")


@app.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b
