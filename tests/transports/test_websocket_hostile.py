"""issue 16 items 3 and 6: a WebSocket peer that trickles a message is cut off by a total
deadline; protocol errors close with the codes RFC 6455 section 7.4.1 gives them."""

from __future__ import annotations

import pytest
import trio
from wsproto.events import TextMessage

from runtime.transports import HttpLimits

from .app import make_app, serving
from .raw_ws import frame, open_raw_websocket

PING = '{"jsonrpc":"2.0","id":1,"method":"ping"}'


async def test_a_trickled_message_meets_a_total_deadline() -> None:
    app, _ = make_app()
    limits = HttpLimits(ws_message_timeout=1.0, ws_ping_interval=None)
    with trio.fail_after(10):
        async with serving(app, "ws", http_limits=limits) as address:
            raw = await open_raw_websocket(address)
            started = trio.current_time()
            code = None
            async with trio.open_nursery() as nursery:

                async def read() -> None:
                    nonlocal code
                    code = await raw.close_code()
                    nursery.cancel_scope.cancel()

                nursery.start_soon(read)
                for char in PING * 20:  # one fragment per character, 0.1 s apart
                    try:
                        await raw.send(TextMessage(data=char, message_finished=False))
                    except (trio.BrokenResourceError, trio.ClosedResourceError):
                        break
                    await trio.sleep(0.1)
            assert code == 1008, code
            assert 0.9 < trio.current_time() - started < 3.0


async def test_a_quick_fragmented_message_is_served() -> None:
    app, _ = make_app()
    limits = HttpLimits(ws_message_timeout=1.0, ws_ping_interval=None)
    with trio.fail_after(10):
        async with serving(app, "ws", http_limits=limits) as address:
            raw = await open_raw_websocket(address)
            for index, char in enumerate(PING):
                await raw.send(TextMessage(data=char, message_finished=index == len(PING) - 1))
            event = await raw.next_event()
            assert isinstance(event, TextMessage), event
            assert event.data == '{"jsonrpc":"2.0","id":1,"result":{}}'


@pytest.mark.parametrize(
    ("data", "code"),
    [
        pytest.param(frame(0x1, b'"\xff\xfe"'), 1007, id="invalid-utf8"),
        pytest.param(frame(0x2, b"[]"), 1003, id="binary"),
        pytest.param(frame(0x1, PING.encode(), mask=False), 1002, id="unmasked"),
        pytest.param(frame(0x3, b"x"), 1002, id="reserved-opcode"),
        pytest.param(bytes([0xC1, 0x80, 1, 2, 3, 4]), 1002, id="rsv1-without-extension"),
        pytest.param(frame(0x9, b"p" * 126), 1002, id="control-frame-too-long"),
        pytest.param(frame(0x0, b"x"), 1002, id="continuation-without-start"),
        pytest.param(frame(0x1, b" " * 70_000), 1009, id="too-big"),
    ],
)
async def test_protocol_errors_close_with_their_codes(data: bytes, code: int) -> None:
    app, _ = make_app(max_frame_size=65536)
    with trio.fail_after(10):
        async with serving(app, "ws") as address:
            raw = await open_raw_websocket(address)
            await raw.send_raw(data)
            assert await raw.close_code() == code
