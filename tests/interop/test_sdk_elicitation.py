"""Issue 3: one tool asks the user for input; the official SDK client answers it as a
server-to-client request (handshake era) and as multi round-trip retries (2026-07-28)."""

from __future__ import annotations

import pytest
import trio

from ..peers import cli, run_sdk_client

CLIENT = "interop/sdk_elicitation_client.py"


@pytest.mark.parametrize(
    ("mode", "version"), [("legacy", "2025-11-25"), ("2026-07-28", "2026-07-28")]
)
async def test_sdk_client_answers_elicitation(mode: str, version: str) -> None:
    seen = await run_sdk_client(CLIENT, mode, "--", *cli("serve", "examples/elicitation.py"))
    assert seen["version"] == version
    assert seen["greet"] == "Hello, Grace!"
    assert seen["trip"] == "Booked Lima, window seat."
    assert seen["asked"] == ["What is your name?", "Book a trip to Lima?", "Window or aisle?"]


@pytest.mark.parametrize(
    ("mode", "version"), [("legacy", "2025-11-25"), ("2026-07-28", "2026-07-28")]
)
async def test_sdk_client_answers_elicitation_over_streamable_http(mode: str, version: str) -> None:
    """Handshake era: elicitation/create travels on the POST's SSE stream and the answer
    comes back as a new POST; modern: input_required retries."""
    from runtime.cli import load_target

    app = load_target("examples/elicitation.py")
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            host, port = (await nursery.start(app.serve_http, 0))[:2]
            seen = await run_sdk_client(CLIENT, mode, "--", f"http://{host}:{port}/mcp")
            nursery.cancel_scope.cancel()
    assert seen["version"] == version
    assert seen["greet"] == "Hello, Grace!"
    assert seen["trip"] == "Booked Lima, window seat."
