"""A server on the official SDK's 1.x line (PyPI ``mcp<2``, ``FastMCP`` from
``mcp.server.fastmcp``), over stdio: it predates 2026-07-28 (no ``server/discover``).

Run by tests/client/test_sdk_v1.py with the interpreter of a separate virtualenv
(``.ci/mcp1``, made by .ci/run), because the test extra pins the SDK's 2.x line.
"""

from mcp.server.fastmcp import FastMCP

mcp = FastMCP("fastmcp-v1")


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@mcp.resource("note://hello")
def hello() -> str:
    """A fixed note."""
    return "hello from FastMCP 1.x"


if __name__ == "__main__":
    mcp.run()
