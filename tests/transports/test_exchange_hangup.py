"""An exchange's hang-up bookkeeping (scopes to cancel are kept only once one is given)."""

from __future__ import annotations

import trio

from runtime.transports.http._exchange import Exchange
from runtime.transports.http._http11 import RequestHead


class _Driver:
    """No I/O: these tests only mark hang-ups."""

    aborted = 0

    def abort(self) -> None:
        self.aborted += 1


def _exchange(driver: _Driver) -> Exchange:
    head = RequestHead("POST", "/mcp", "/mcp", {}, (1, 1), (), {}, 2, True, False)
    return Exchange(driver, head)  # type: ignore[arg-type]


async def test_a_hang_up_cancels_the_scopes_still_registered_and_later_ones_at_once() -> None:
    exchange = _exchange(_Driver())
    kept, forgotten, never = trio.CancelScope(), trio.CancelScope(), trio.CancelScope()
    exchange.forget(never)  # forgetting what was never given is harmless
    exchange.cancel_on_disconnect(kept)
    exchange.cancel_on_disconnect(forgotten)
    exchange.forget(forgotten)
    assert not exchange.hung_up_seen
    exchange.hung_up()
    assert exchange.hung_up_seen
    assert kept.cancel_called and not forgotten.cancel_called and not never.cancel_called
    late = trio.CancelScope()
    exchange.cancel_on_disconnect(late)  # after the hang-up: cancelled at once
    assert late.cancel_called
    exchange.hung_up()  # told again: nothing breaks
    assert exchange.disconnected.is_set()


async def test_abort_on_disconnect_aborts_once_the_client_hangs_up() -> None:
    driver = _Driver()
    exchange = _exchange(driver)
    exchange.abort_on_disconnect()
    assert driver.aborted == 0
    exchange.hung_up()
    assert driver.aborted == 1
