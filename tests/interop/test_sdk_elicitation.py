"""Issue 3: one tool asks the user for input; the official SDK client answers it as a
server-to-client request (handshake era) and as multi round-trip retries (2026-07-28)."""

from __future__ import annotations

import json
import sys

import pytest
import trio

from ..peers import ROOT, cli

CLIENT = ROOT / "tests" / "interop" / "sdk_elicitation_client.py"


@pytest.mark.parametrize(
    ("mode", "version"), [("legacy", "2025-11-25"), ("2026-07-28", "2026-07-28")]
)
async def test_sdk_client_answers_elicitation(mode: str, version: str) -> None:
    with trio.fail_after(60):
        result = await trio.run_process(
            [sys.executable, str(CLIENT), mode, "--", *cli("serve", "examples/elicitation.py")],
            cwd=ROOT,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert result.returncode == 0, result.stderr.decode()
    seen = json.loads(result.stdout)
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
    from runtime._cli import load_target

    app = load_target("examples/elicitation.py")
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            host, port = (await nursery.start(app.serve_http, 0))[:2]
            result = await trio.run_process(
                [sys.executable, str(CLIENT), mode, "--", f"http://{host}:{port}/mcp"],
                cwd=ROOT,
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
            nursery.cancel_scope.cancel()
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    seen = json.loads(result.stdout)
    assert seen["version"] == version
    assert seen["greet"] == "Hello, Grace!"
    assert seen["trip"] == "Booked Lima, window seat."
