"""Bad input never knocks the HTTP endpoint over: arbitrary bodies and MCP headers get a
4xx/2xx answer (never 5xx, never a hang), and the server still serves a valid request."""

from __future__ import annotations

import msgspec
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ..core.test_fuzz import MESSAGE
from .app import make_app, modern, modern_headers, serving
from .http_client import request

HEADERS = st.dictionaries(
    st.sampled_from(
        [
            "mcp-protocol-version",
            "mcp-method",
            "mcp-name",
            "mcp-session-id",
            "accept",
            "content-type",
            "last-event-id",
        ]
    ),
    st.sampled_from(
        [
            "2026-07-28",
            "2025-03-26",
            "tools/call",
            "echo",
            "application/json",
            "text/event-stream",
            "x",
            "",
        ]
    ),
    max_size=5,
)
BODY = st.one_of(
    st.binary(max_size=80),
    MESSAGE.map(msgspec.json.encode),
    st.lists(MESSAGE, max_size=4).map(msgspec.json.encode),
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    cases=st.lists(
        st.tuples(st.sampled_from(["POST", "GET", "DELETE", "PUT"]), HEADERS, BODY),
        min_size=1,
        max_size=5,
    )
)
def test_arbitrary_requests_never_break_the_endpoint(
    cases: list[tuple[str, dict[str, str], bytes]],
) -> None:
    async def main() -> None:
        app, _ = make_app(request_timeout=2)
        with trio.fail_after(20):
            async with serving(app) as address:
                for method, headers, body in cases:
                    headers = {"content-type": "application/json", **headers}
                    with trio.move_on_after(3) as slow:  # an SSE stream may stay open
                        response = await request(
                            address, method, headers=headers, body=body if method == "POST" else b""
                        )
                        assert 200 <= response.status < 500, (response.status, response.body)
                    if slow.cancelled_caught:
                        continue
                ok = await request(
                    address,
                    "POST",
                    headers={
                        "content-type": "application/json",
                        "accept": "application/json, text/event-stream",
                        **modern_headers("tools/list"),
                    },
                    body=modern(1, "tools/list"),
                )
                assert ok.status == 200 and ok.json()["result"]["tools"]

    trio.run(main)
