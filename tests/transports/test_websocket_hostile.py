"""issue 16 items 3 and 6: a WebSocket peer that trickles a message is cut off by a total
deadline; protocol errors close with the codes RFC 6455 section 7.4.1 gives them."""

from __future__ import annotations

import trio
from wsproto.events import TextMessage

from runtime.transports import HttpLimits

from .app import make_app, serving
from .raw_ws import open_raw_websocket

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
