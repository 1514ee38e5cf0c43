"""A RequestContext made with the era its transport read (``modern=``), as
``dispatch_single`` makes one per modern HTTP POST: the modern fields set at once, the
session's left alone; without it, the session's negotiated version and capabilities."""

from __future__ import annotations

from typing import Any

import msgspec
import trio

from runtime.core import Dispatcher, RequestContext, Session, dispatch_single
from runtime.protocol import (
    META_CLIENT_CAPABILITIES,
    META_PROTOCOL_VERSION,
    Envelope,
    decode_frame,
    select_era,
)

META = {META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {"sampling": {}}}


class _Peer:
    connection_id = "c1"


def test_a_modern_context_takes_the_era_read_by_its_transport() -> None:
    modern = select_era(META)
    assert modern is not None
    session = Session("http", principal="alice")
    ctx = RequestContext("tools/list", 1, None, session, _Peer(), modern=modern)  # type: ignore[arg-type]
    assert ctx.modern is True and ctx.protocol_version == "2026-07-28"
    assert ctx.meta is META and ctx.client_capabilities == {"sampling": {}}
    assert session.principal == "alice" and session.protocol_version is None
    assert session.client_capabilities == {}
    assert ctx.prepared is None and ctx.takes_pieces is False


def test_a_handshake_context_takes_the_sessions_version() -> None:
    session = Session("stdio")
    session.lifecycle.version = "2025-11-25"
    session.client_capabilities = {"roots": {}}
    ctx = RequestContext("tools/list", 1, None, session, _Peer())  # type: ignore[arg-type]
    assert ctx.modern is False and ctx.meta is None
    assert ctx.protocol_version == "2025-11-25" and ctx.client_capabilities == {"roots": {}}
    assert session.principal is None


async def test_dispatch_single_serves_the_request_at_the_modern_reading() -> None:
    seen: list[tuple[Any, ...]] = []

    async def look(ctx: RequestContext) -> dict[str, Any]:
        seen.append(
            (
                ctx.modern,
                ctx.protocol_version,
                ctx.client_capabilities,
                ctx.session.principal,
                ctx.session.transport,
                ctx.prepared,
                ctx.takes_pieces,
            )
        )
        return {}

    async def send(data: bytes) -> None:
        raise AssertionError("nothing is sent beside the reply")

    message = decode_frame(b'{"jsonrpc":"2.0","id":3,"method":"look","params":{}}')
    assert isinstance(message, Envelope)
    prepared = object()
    with trio.fail_after(5):
        reply = await dispatch_single(
            Dispatcher({"look": look}), None, message, send, "c1", "bob", select_era(META), prepared
        )
    assert reply is not None and msgspec.json.decode(reply) == {
        "jsonrpc": "2.0",
        "id": 3,
        "result": {},
    }
    assert seen == [(True, "2026-07-28", {"sampling": {}}, "bob", "http", prepared, True)]


async def test_a_modern_request_served_alone_gets_its_session_only_when_asked() -> None:
    made: list[Session] = []
    seen: list[Any] = []

    def make() -> Session:
        made.append(Session("http", "carol"))
        return made[-1]

    async def stateless(ctx: RequestContext) -> dict[str, Any]:
        return {}

    async def stateful(ctx: RequestContext) -> dict[str, Any]:
        seen.append(ctx.session)
        ctx.session.state["k"] = 1
        seen.append(ctx.session)
        return {"k": ctx.session.state["k"], "who": ctx.session.principal}

    modern = select_era(META)
    assert modern is not None
    dispatcher = Dispatcher({"stateless": stateless, "stateful": stateful})
    lazy = RequestContext("stateless", 1, None, make, _Peer(), modern=modern)  # type: ignore[arg-type]
    with trio.fail_after(5):
        assert await dispatcher.dispatch(lazy) == b'{"jsonrpc":"2.0","id":1,"result":{}}'
    assert made == []
    asked = RequestContext("stateful", 2, None, make, _Peer(), modern=modern)  # type: ignore[arg-type]
    with trio.fail_after(5):
        reply = await dispatcher.dispatch(asked)
    assert msgspec.json.decode(reply)["result"] == {"k": 1, "who": "carol"}
    assert len(made) == 1 and seen == [made[0], made[0]]
    assert made[0].transport == "http" and made[0].protocol_version is None


def test_a_context_still_refuses_attributes_it_does_not_have() -> None:
    session = Session("stdio")
    ctx = RequestContext("x", 1, None, session, _Peer())  # type: ignore[arg-type]
    assert ctx.session is session
    try:
        ctx.nothing  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "nothing" in str(exc)
    else:
        raise AssertionError("an unknown attribute must raise AttributeError")
    assert not hasattr(ctx, "_make_session")
