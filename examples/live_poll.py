"""A live poll for a web page: MCP over WebSocket, straight from the browser.

A browser can open a WebSocket (subprotocol ``mcp``, one JSON-RPC message per text frame) to
``ws://127.0.0.1:8000/mcp`` and speak MCP with no SDK: ``examples/web/poll.html`` is such a
page, about 60 lines of plain JavaScript. The connection stays open, so the page subscribes
to ``poll://results`` and redraws on each ``notifications/resources/updated``: every open page
sees every vote as it happens.

Browsers send an ``Origin`` header; the server accepts only the origins it is told to (the
page's own), so another site the user visits cannot drive this server through the browser.

Run it::

    python examples/live_poll.py                      # ws://127.0.0.1:8000/mcp
    python -m http.server 8080 -d examples/web        # then open http://127.0.0.1:8080/poll.html
"""

from __future__ import annotations

import os

import msgspec

from runtime import Server, ToolError

app = Server("live-poll", "1.0.0", instructions="A poll: vote, and watch the results change.")

QUESTION = "Which concurrency library?"
VOTES: dict[str, int] = {"trio": 0, "asyncio": 0, "threads": 0}
RESULTS = "poll://results"
#: The web page's origins (where poll.html is served from); everything else is refused.
PAGE_ORIGINS = os.environ.get(
    "POLL_PAGE_ORIGINS", "http://127.0.0.1:8080,http://localhost:8080"
).split(",")


class Results(msgspec.Struct):
    question: str
    votes: dict[str, int]
    total: int


@app.resource(RESULTS, mime_type="application/json")
def results() -> Results:
    """The question and the votes so far; subscribe to hear about each vote."""
    return Results(QUESTION, dict(VOTES), sum(VOTES.values()))


@app.tool
async def vote(option: str) -> Results:
    """Vote for one option.

    Args:
        option: One of the poll's options.
    """
    if option not in VOTES:
        raise ToolError(f"{option!r} is not an option; choose one of {', '.join(VOTES)}")
    VOTES[option] += 1
    app.notify_resource_updated(RESULTS)  # every subscribed page redraws
    return results()


if __name__ == "__main__":
    app.run("ws", port=8000, allowed_origins=PAGE_ORIGINS)
