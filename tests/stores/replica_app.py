"""The server the multi-replica tests run (three ``mcp-runtime serve`` processes)."""

from __future__ import annotations

import os

import trio

from runtime import Context, Server

app = Server("replica", "1.0.0")
REPLICA = os.environ.get("REPLICA_NAME", "?")


@app.tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@app.tool
def whoami() -> str:
    """Which replica answered."""
    return REPLICA


@app.tool
async def count(to: int, *, ctx: Context) -> str:
    """Count up with progress."""
    for n in range(1, to + 1):
        await ctx.report_progress(n, to, f"step {n}")
    return f"counted to {to} on {REPLICA}"


@app.tool
async def confirm(question: str, *, ctx: Context) -> str:
    """Ask the user (elicitation) and report the answer."""
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    answer = await ctx.elicit(question, schema)
    return f"{answer.get('action')}:{answer.get('content')}"


@app.tool
def grow(name: str) -> str:
    """Register a new tool (tools/list_changed goes to every session, on every replica)."""

    def extra() -> str:
        return name

    app.add_tool(extra, name=name, description="added at run time")
    return f"added {name} on {REPLICA}"


@app.tool
def touch(uri: str) -> str:
    """Say a resource changed (resources/updated for its subscribers, on every replica)."""
    app.notify_resource_updated(uri)
    return f"touched {uri} on {REPLICA}"


@app.tool
async def tick(times: int, delay: float = 0.05) -> str:
    """Announce ``times`` list changes, ``delay`` apart (standalone GET stream events)."""
    for _ in range(times):
        app.notify_list_changed("prompts")
        await trio.sleep(delay)
    return f"ticked {times} on {REPLICA}"


@app.prompt
def hello(name: str) -> str:
    """Greet."""
    return f"Hello {name}"


@app.resource("notes://welcome")
def welcome() -> str:
    """A note."""
    return "welcome"


@app.tool
def pid() -> int:
    """This worker's process id."""
    return os.getpid()


@app.tool(task="optional")
async def build(target: str, seconds: float = 0.2) -> str:
    """A slow job (run as a task)."""
    await trio.sleep(seconds)
    return f"built {target} on {REPLICA}"


@app.tool(task="optional")
async def deploy(environment: str, ctx: Context) -> str:
    """Ask for confirmation while running as a task."""
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    answer = await ctx.elicit(f"Deploy to {environment}?", schema)
    if answer.get("action") == "accept" and answer["content"].get("ok"):
        return f"deployed to {environment} on {REPLICA}"
    return "deployment cancelled"


@app.tool(task="required")
async def forever() -> str:
    """Runs until cancelled."""
    await trio.sleep_forever()


@app.tool
async def sample_two(*, ctx: Context) -> str:
    """Ask the client's model twice at once (two server requests pending together)."""
    answers: dict[str, str] = {}

    async def ask(tag: str) -> None:
        message = {"role": "user", "content": {"type": "text", "text": tag}}
        result = await ctx.sample([message], max_tokens=5)
        answers[tag] = result["content"]["text"]

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask, "one")
        nursery.start_soon(ask, "two")
    return f"{answers['one']}|{answers['two']} on {REPLICA}"


@app.tool(task="optional")
async def standby(ctx: Context) -> str:
    """Ask the client, naming the replica that runs it, and wait for the answer."""
    answer = await ctx.elicit(f"standing by on {REPLICA}", {"type": "object", "properties": {}})
    return f"{answer.get('action')} on {REPLICA}"


@app.tool(task="optional")
async def steps(n: int, ctx: Context) -> str:
    """Report progress ``n`` times, a little apart, the first at once (as a task: before
    the CreateTaskResult has left, and for the whole task's life)."""
    for k in range(1, n + 1):
        await ctx.report_progress(k, n, f"step {k} on {REPLICA}")
        await trio.sleep(0.05)
    return f"{n} steps on {REPLICA}"


@app.tool
async def crawl(steps: int, delay: float, ctx: Context) -> str:
    """Report progress ``steps`` times, ``delay`` apart, naming this replica (a long call
    whose answer streams: the replica running it may be killed meanwhile)."""
    for k in range(1, steps + 1):
        await ctx.report_progress(k, steps, f"step {k} on {REPLICA}")
        await trio.sleep(delay)
    return f"crawled {steps} on {REPLICA}"
