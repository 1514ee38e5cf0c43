"""A result holding runtime.protocol.Pieces (a long text encoded apart, issue 22 target 2):
the dispatcher answers it as Pieces to a caller that writes vectors (``ctx.takes_pieces``)
and as the same bytes joined to any other; a stream reader asks for Pieces for a lone request
on a channel that takes them (FramedChannel), never for a batch item, and the bytes on the
wire are the same either way."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import trio

from runtime.core import Dispatcher, RequestContext, Session
from runtime.protocol import Pieces, encode_result

from .test_connection_eager import CountingChannel, call, serve

TEXT = '"' + "long text \u00e9\\n " * 5000 + '"'


def _text() -> Pieces:
    data = TEXT.encode()
    return Pieces([data[:1000], bytearray(data[1000:])])


def _dispatcher(seen: list[bool]) -> Dispatcher:
    async def read(ctx: RequestContext) -> Any:
        seen.append(ctx.takes_pieces)
        return {"contents": [{"uri": "t://x", "text": _text()}]}

    async def fail(ctx: RequestContext) -> Any:
        return {"bad": object()}

    return Dispatcher({"read": read, "fail": fail})


def _want(request_id: Any) -> bytes:
    return encode_result(request_id, {"contents": [{"uri": "t://x", "text": msgspec.Raw(TEXT)}]})


async def _dispatch(dispatcher: Dispatcher, method: str, takes_pieces: bool) -> Any:
    class _Peer:
        connection_id = "test"

    ctx = RequestContext(method, 7, None, Session("test"), _Peer())  # type: ignore[arg-type]
    ctx.takes_pieces = takes_pieces
    return await dispatcher.dispatch(ctx)


async def test_the_dispatcher_answers_pieces_only_to_a_caller_that_takes_them() -> None:
    dispatcher = _dispatcher([])
    vector = await _dispatch(dispatcher, "read", True)
    assert isinstance(vector, Pieces) and vector.join() == _want(7)
    assert any(type(part) is bytearray and len(part) > 50000 for part in vector.parts)
    joined = await _dispatch(dispatcher, "read", False)
    assert type(joined) is bytes and joined == _want(7)
    # A value msgspec cannot encode is still the handler's bug: -32603, as before.
    failed = msgspec.json.decode(await _dispatch(dispatcher, "fail", True))
    assert failed["error"]["code"] == -32603


class _Recording(CountingChannel):
    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self.kinds: list[list[str]] = []

    async def send(self, messages: Sequence[tuple[Any, object]]) -> None:
        self.kinds.append([type(m).__name__ for m, _ in messages])
        await super().send(messages)


async def test_a_stream_reader_writes_a_lone_reply_as_pieces_and_a_batch_joined(
    monkeypatch: Any,
) -> None:
    import tests.core.test_connection_eager as harness

    monkeypatch.setattr(harness, "CountingChannel", _Recording)
    seen: list[bool] = []
    with trio.fail_after(10):
        async with serve(_dispatcher(seen)) as h:
            await h.peer.send(call(1, "read"))
            assert await h.peer.receive_frame() == _want(1)
            await h.peer.send([call(2, "read"), call(3, "read")])
            batch = msgspec.json.decode(await h.peer.receive_frame())
            assert [msgspec.json.encode(item) for item in batch] == [
                msgspec.json.encode(msgspec.json.decode(_want(i))) for i in (2, 3)
            ]
            assert isinstance(h.channel, _Recording)
            assert h.channel.kinds[0] == ["Pieces"] and h.channel.kinds[1] == ["bytes"]
    assert seen == [True, False, False]
