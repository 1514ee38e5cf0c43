"""Bad input never knocks the server over: arbitrary frames and JSON values are answered or
ignored, and the connection still answers a ping afterwards."""

from __future__ import annotations

import msgspec
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ..servers.wire import app
from ..wire import open_memory_peer

METHODS = st.sampled_from(
    [
        "tools/call",
        "tools/list",
        "resources/read",
        "prompts/get",
        "initialize",
        "completion/complete",
        "tasks/get",
        "subscriptions/listen",
        "logging/setLevel",
        "notifications/cancelled",
        "server/discover",
        "nope",
    ]
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
MODERN_META = st.fixed_dictionaries(
    {"io.modelcontextprotocol/protocolVersion": st.sampled_from(["2026-07-28", "2025-11-25", 7])},
    optional={
        "io.modelcontextprotocol/clientCapabilities": JSON,
        "io.modelcontextprotocol/logLevel": st.sampled_from(["debug", "loud", 3]),
        "progressToken": JSON,
    },
)
PARAMS = JSON | st.fixed_dictionaries(
    {"_meta": MODERN_META},
    optional={
        "name": st.sampled_from(["echo", "slow", "shout", "nope"]),
        "arguments": JSON,
        "uri": st.sampled_from(["fail://always", "x://y"]),
        "cursor": st.text(max_size=10),
        "inputResponses": JSON,
        "requestState": st.text(max_size=30),
        "notifications": JSON,
        "taskId": st.text(max_size=10),
    },
)
MESSAGE = st.fixed_dictionaries(
    {"jsonrpc": st.sampled_from(["2.0", "1.0", 2])},
    optional={
        "id": st.one_of(st.integers(), st.text(max_size=5), st.none(), st.booleans()),
        "method": METHODS,
        "params": PARAMS,
        "result": JSON,
    },
)
FRAME = st.one_of(
    st.binary(max_size=64).filter(lambda b: b"\n" not in b and b.strip()),
    MESSAGE.map(msgspec.json.encode),
    st.lists(MESSAGE, max_size=5).map(msgspec.json.encode),
    JSON.map(msgspec.json.encode),
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(frames=st.lists(FRAME, min_size=1, max_size=8))
def test_arbitrary_frames_never_break_the_connection(frames: list[bytes]) -> None:
    async def main() -> None:
        with trio.fail_after(10):
            async with open_memory_peer(app) as peer:
                for frame in frames:
                    await peer.send_bytes(frame + b"\n")
                await peer.send({"jsonrpc": "2.0", "id": "final-ping", "method": "ping"})
                while True:
                    reply = await peer.receive()
                    if isinstance(reply, dict) and reply.get("id") == "final-ping":
                        break
                    # Everything else is a well-formed JSON-RPC response (or batch of them).
                    for item in reply if isinstance(reply, list) else [reply]:
                        assert item["jsonrpc"] == "2.0"
                        assert ("result" in item) != ("error" in item)
                        assert "Traceback" not in msgspec.json.encode(item).decode()

    trio.run(main)
