"""Structured hostile input for the end-to-end fuzz suites (issue 16): frames a peer may send,
each tagged with whether it is a request that must be answered, exactly once, under its id.

A *tracked* request has a fresh id ``"fz-<n>"`` (no other frame ever uses that prefix) and a
well-formed envelope, but anything at all in ``params``: deep nesting (past the decoder's
limit too), huge and tiny numbers, every JSON type where a field expects another. Everything
else is *noise*: bytes that are not JSON or not UTF-8, every JSON type in every envelope
field, notifications, responses nobody asked for, empty and oversized batches. Noise may be
answered (with id null or its own id) or not; it must never break the connection.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import msgspec
from hypothesis import strategies as st

_ids = itertools.count()

#: Values of every JSON type, including the awkward ones.
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=2**63, max_value=2**80),  # past int64
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 5e-324, 1.7976931348623157e308]),
    st.text(max_size=12),
    st.sampled_from(["", "\x00", "\u2028", "\ud7ff", "💥", "a" * 300]),
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=10,
)


#: Raw JSON texts msgspec cannot produce from Python values: numbers past float range,
#: deep nesting around and past the decoder's limit, duplicate keys.
def _raw_json(max_depth: int) -> st.SearchStrategy[bytes]:
    return st.one_of(
        st.sampled_from(
            [b"1e400", b"-1e400", b"1e-400", b"123456789012345678901234567890", b"-0", b"-0.0e-0"]
        ),
        st.integers(min_value=1, max_value=max_depth).map(lambda n: b"[" * n + b"]" * n),
        st.integers(min_value=1, max_value=max_depth).map(lambda n: b'{"a":' * n + b"1" + b"}" * n),
        st.just(b'{"a":1,"a":"two"}'),
    )


#: Inside a tracked request: shallow enough that the request is still read (and answered
#: under its id); deeper ones are noise, answered -32700 with id null.
RAW_JSON = _raw_json(400)
DEEP_JSON = _raw_json(3000) | st.just(b"[" * 100_000 + b"]" * 100_000)
METHODS = st.sampled_from(
    [
        "ping",
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/read",
        "resources/templates/list",
        "prompts/list",
        "prompts/get",
        "completion/complete",
        "logging/setLevel",
        "tasks/get",
        "tasks/list",
        "server/discover",
        "initialize",
        "nope/nothing",
        "",
    ]
)
_PARAM_FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "name": st.sampled_from(["echo", "shout", "nope"]) | JSON,
        "arguments": JSON,
        "uri": st.sampled_from(["fail://always", "x://y", ""]) | JSON,
        "cursor": JSON,
        "_meta": st.fixed_dictionaries(
            {},
            optional={
                "io.modelcontextprotocol/protocolVersion": st.sampled_from(
                    ["2026-07-28", "2025-11-25", "1999-01-01"]
                )
                | JSON,
                "io.modelcontextprotocol/clientCapabilities": JSON,
                "progressToken": JSON,
            },
        ),
        "inputResponses": JSON,
        "requestState": JSON,
        "taskId": JSON,
        "level": JSON,
    },
)


@dataclass
class Frame:
    """One message (or batch, or garbage) as bytes, and the tracked ids it carries."""

    data: bytes
    tracked: list[str] = field(default_factory=list)


def _request(params: bytes | None, method: str) -> Frame:
    request_id = f"fz-{next(_ids):012d}"  # fixed width: frame sizes never depend on the count
    head = b'{"jsonrpc":"2.0","id":%b,"method":%b' % (
        msgspec.json.encode(request_id),
        msgspec.json.encode(method),
    )
    body = head + (b',"params":%b}' % params if params is not None else b"}")
    return Frame(body, [request_id])


@st.composite
def tracked_request(draw: st.DrawFn) -> Frame:
    method = draw(METHODS)
    choice = draw(st.integers(0, 3))
    if choice == 0:
        params: bytes | None = None
    elif choice == 1:
        params = msgspec.json.encode(draw(_PARAM_FIELDS))
    elif choice == 2:  # a structured value, but of any shape
        params = msgspec.json.encode(
            draw(st.lists(JSON, max_size=3) | st.dictionaries(st.text(max_size=5), JSON))
        )
    else:  # raw hostile JSON where an argument goes
        params = b'{"name":"echo","arguments":{"text":%b}}' % draw(RAW_JSON)
    return _request(params, method)


_ENVELOPE_KEYS = st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error"])


@st.composite
def noise(draw: st.DrawFn, in_batch: bool = False) -> Frame:
    # In a batch, only what keeps the whole batch valid JSON (and readable at any depth).
    kind = draw(st.sampled_from([1, 2, 5, 6] if in_batch else range(7)))
    if kind == 0:  # not JSON, not UTF-8, control bytes
        return Frame(draw(st.binary(min_size=1, max_size=60)))
    if kind == 1:  # a JSON value that is not a message
        return Frame(msgspec.json.encode(draw(JSON)))
    if kind == 2:  # every JSON type in every envelope field
        message = draw(st.dictionaries(_ENVELOPE_KEYS, JSON, min_size=1))
        if isinstance(message.get("id"), str) and message["id"].startswith("fz-"):
            message["id"] = "noise"
        return Frame(msgspec.json.encode(message))
    if kind == 3:  # raw hostile JSON as a whole frame, or in params, nested up to 100,000
        deep = draw(DEEP_JSON)
        return Frame(
            draw(
                st.sampled_from(
                    [deep, b'{"jsonrpc":"2.0","id":1,"method":"ping","params":[%b]}' % deep]
                )
            )
        )
    if kind == 4:  # invalid UTF-8 inside a string of an otherwise valid request
        return Frame(b'{"jsonrpc":"2.0","id":"u","method":"ping","params":{"x":"\xff\xfe"}}')
    if kind == 5:  # a notification or a response nobody asked for
        return Frame(
            msgspec.json.encode(
                draw(
                    st.sampled_from(
                        [
                            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}},
                            {"jsonrpc": "2.0", "method": "notifications/initialized"},
                            {"jsonrpc": "2.0", "id": 99, "result": {}},
                            {"jsonrpc": "2.0", "id": 98, "error": {"code": 1, "message": "x"}},
                        ]
                    )
                )
            )
        )
    return Frame(b"[]")  # an empty batch


@st.composite
def batch(draw: st.DrawFn) -> Frame:
    """A batch mixing tracked requests with noise items."""
    items = draw(st.lists(st.one_of(tracked_request(), noise(True)), min_size=1, max_size=6))
    tracked = [request_id for item in items for request_id in item.tracked]
    return Frame(b"[" + b",".join(item.data for item in items) + b"]", tracked)


FRAMES = st.lists(st.one_of(tracked_request(), noise(), batch()), min_size=1, max_size=8)


def split_points(total: int) -> st.SearchStrategy[list[int]]:
    """Where to cut a byte stream into writes (split and merged frames)."""
    return st.lists(st.integers(0, max(total, 0)), max_size=6).map(sorted)


def chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    edges = [0, *cuts, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(edges) if b > a]


def check_replies(replies: list[Any], tracked: list[str], *, exactly: bool = True) -> None:
    """Every tracked request answered exactly once (a result or an error under its id; with
    ``exactly=False`` at most once: an HTTP POST refused whole answers with id null), every
    reply a well-formed JSON-RPC response."""
    seen: dict[str, int] = {}
    for reply in replies:
        for item in reply if isinstance(reply, list) else [reply]:
            assert isinstance(item, dict) and item.get("jsonrpc") == "2.0", item
            if "method" in item:
                continue  # a notification from the server (a log message, list_changed)
            assert ("result" in item) != ("error" in item), item
            if "error" in item:
                assert isinstance(item["error"].get("code"), int), item
            request_id = item.get("id")
            if isinstance(request_id, str) and request_id.startswith("fz-"):
                seen[request_id] = seen.get(request_id, 0) + 1
    if exactly:
        assert seen == dict.fromkeys(tracked, 1), (seen, tracked)
    else:
        assert set(seen) <= set(tracked) and set(seen.values()) <= {1}, (seen, tracked)


def assert_no_traceback(wire: bytes) -> None:
    assert b"Traceback" not in wire and b'File "' not in wire, wire[:2000]
