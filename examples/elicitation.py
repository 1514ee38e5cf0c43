"""Asking the user for input from a tool, in both protocol eras.

Handshake era (2025-11-25 and earlier): ``ctx.elicit`` sends ``elicitation/create`` to the
client and waits for the answer. Modern era (2026-07-28): the same call makes the tool answer
``resultType: "input_required"``; the client retries with the answer and the tool runs again,
getting it back from the same call. The tool code is identical for both.

Run it:  mcp-runtime serve examples/elicitation.py
"""

from __future__ import annotations

from runtime import Context, Server

app = Server("elicitation-demo", "1.0.0")

NAME_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "description": "Your name"}},
    "required": ["name"],
}


@app.tool
async def greet(ctx: Context) -> str:
    """Greet the user by name, asking for it first."""
    answer = await ctx.elicit("What is your name?", NAME_SCHEMA)
    if answer.get("action") != "accept":
        return "Maybe another time."
    return f"Hello, {answer['content']['name']}!"


@app.tool
async def book_trip(destination: str, ctx: Context) -> str:
    """Book a trip, confirming twice (two rounds of input)."""
    first = await ctx.elicit(
        f"Book a trip to {destination}?",
        {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
    )
    if first.get("action") != "accept" or not first["content"].get("ok"):
        return "Not booked."
    seat = await ctx.elicit(
        "Window or aisle?",
        {
            "type": "object",
            "properties": {"seat": {"type": "string", "enum": ["window", "aisle"]}},
            "required": ["seat"],
        },
    )
    return f"Booked {destination}, {seat['content']['seat']} seat."


if __name__ == "__main__":
    app.run()
