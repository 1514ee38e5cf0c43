"""Quickstart: a small but real MCP server.

Run it:  mcp-runtime serve examples/quickstart.py
"""

from __future__ import annotations

import trio

from runtime import Context, ResourceNotFoundError, Server

app = Server("quickstart", "1.0.0", instructions="Arithmetic, notes and a review prompt.")

NOTES = {"welcome": "Hello from mcp-runtime!", "todo": "Write more tools."}


@app.tool(annotations={"readOnlyHint": True})
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first addend.
        b: The second addend.
    """
    return a + b


@app.tool
async def countdown(start: int = 3, delay: float = 0.01, *, ctx: Context) -> str:
    """Count down to zero, reporting progress on the way.

    Args:
        start: Where to start counting.
        delay: Seconds between steps.
    """
    for step in range(start):
        await ctx.report_progress(step + 1, start, f"{start - step} left")
        await trio.sleep(delay)
    return "liftoff"


@app.tool
def divide(numerator: float, denominator: float) -> float:
    """Divide two numbers (fails on division by zero, as a tool error)."""
    return numerator / denominator


@app.resource("config://app", mime_type="application/json")
def config() -> dict[str, object]:
    """The server's configuration."""
    return {"name": app.name, "version": app.version, "notes": len(NOTES)}


@app.resource("notes://{name}", mime_type="text/plain")
def note(name: str) -> str:
    """A note by name."""
    if name not in NOTES:
        raise ResourceNotFoundError(f"notes://{name}", f"No note named {name!r}")
    return NOTES[name]


@app.prompt(title="Code review")
def review(code: str, language: str = "python") -> str:
    """Ask for a careful review of some code.

    Args:
        code: The code to review.
        language: Its programming language.
    """
    return f"Please review this {language} code and point out bugs:\n\n{code}"


if __name__ == "__main__":
    app.run()
