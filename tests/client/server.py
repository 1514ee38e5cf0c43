"""The server the client tests talk to (in-process, or spawned over stdio / pipes)."""

from __future__ import annotations

import os
import sys

import trio

from runtime import Context, Server

app = Server(
    "client-test",
    "1.2.3",
    instructions="A server for the client tests.",
    page_size=int(os.environ.get("CLIENT_TEST_PAGE_SIZE", "0")) or None,
)
EVENTS: list[int] = []


@app.tool
async def echo(text: str) -> str:
    """Echo the text back."""
    return text


@app.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@app.tool
def flags(on: bool, ratio: float, tags: list[str], note: str | None = None) -> dict[str, object]:
    """Return the arguments as received (CLI coercion tests)."""
    return {"on": on, "ratio": ratio, "tags": tags, "note": note}


@app.tool
def fail(message: str = "it broke") -> str:
    """A tool that fails (an isError result)."""
    raise ValueError(message)


@app.tool
async def slow(seconds: float = 30.0, tag: str = "") -> str:
    """Sleep; on cancellation say so on stderr (the tests read it through the client log)."""
    try:
        await trio.sleep(seconds)
    except trio.Cancelled:
        print(f"cancelled slow tag={tag}", file=sys.stderr, flush=True)
        raise
    return f"slept {seconds}"


@app.tool
async def countdown(start: int = 3, delay: float = 0.01, *, ctx: Context) -> str:
    """Report progress ``start`` times, ``delay`` seconds apart, then answer."""
    for step in range(start):
        await ctx.report_progress(step + 1, start, f"step {step + 1}")
        await trio.sleep(delay)
    return "liftoff"


@app.tool
async def confirm(question: str, ctx: Context) -> str:
    """Ask the user (elicitation: a server request, or a 2026-07-28 input round)."""
    answer = await ctx.elicit(
        question, {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    )
    return f"{answer.get('action')}:{answer.get('content', {}).get('ok')}"


@app.tool
async def visit(url: str, ctx: Context) -> str:
    """Send the user to a URL (URL-mode elicitation)."""
    answer = await ctx.elicit_url("Please sign in", url)
    return str(answer.get("action"))


@app.tool
async def summarize(text: str, ctx: Context) -> str:
    """Ask the client's model (sampling) and return its text."""
    result = await ctx.sample(
        [{"role": "user", "content": {"type": "text", "text": text}}], max_tokens=50
    )
    return str(result["content"]["text"])


@app.tool
async def roots(ctx: Context) -> str:
    """The client's roots, comma-separated."""
    return ",".join(root["uri"] for root in await ctx.list_roots())


@app.tool
async def chatty(ctx: Context) -> str:
    """Log a line to the client (notifications/message), then answer."""
    await ctx.info("hello from the tool")
    return "said it"


@app.tool
def touch(count: int = 1) -> int:
    """Announce ``count`` updates of ``data://counter`` (numbered in EVENTS)."""
    for _ in range(count):
        EVENTS.append(len(EVENTS) + 1)
        app.notify_resource_updated("data://counter")
    return len(EVENTS)


@app.tool(
    input_schema={
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "limit": {"type": "integer", "x-mcp-header": "Limit"},
            "query": {"type": "string"},
        },
        "required": ["region", "query"],
    }
)
def search(region: str, query: str, limit: int = 10) -> str:
    """A tool whose region and limit are mirrored into Mcp-Param-* headers (2026-07-28)."""
    return f"{region}:{query}:{limit}"


@app.tool
def crash(status: int = 3) -> str:
    """Exit the process at once (stdio tests of a server that dies)."""
    print(f"crashing with status {status}", file=sys.stderr, flush=True)
    os._exit(status)


@app.tool(task="optional")
async def build(target: str, seconds: float = 0.05) -> str:
    """A slow job that may run as a task."""
    await trio.sleep(seconds)
    return f"built {target}"


@app.tool(task="optional")
async def approve(item: str, ctx: Context) -> str:
    """Ask for approval (as a task: the input goes through tasks/update in 2026-07-28)."""
    answer = await ctx.elicit(f"Approve {item}?", {"type": "object", "properties": {}})
    return f"{item}:{answer.get('action')}"


@app.resource("data://counter", mime_type="text/plain")
def counter() -> str:
    """How many updates were announced."""
    return str(len(EVENTS))


@app.resource("greeting://{name}", mime_type="text/plain")
def greeting(name: str) -> str:
    """A greeting by name."""
    return f"Hello, {name}!"


@app.prompt
def review(code: str, language: str = "python") -> str:
    """Ask for a careful review of some code."""
    return f"Review this {language} code:\n{code}"


@app.completion
async def complete(
    ref_type: str, ref: str, argument: str, value: str, context: dict[str, str]
) -> list[str]:
    options = ["python", "perl", "php", "rust"]
    return [item for item in options if item.startswith(value)]
