"""runtime.core.RequestTable: admission, in flight, cancellation, the server's own requests.
Plain bookkeeping, driven here without trio."""

from __future__ import annotations

import msgspec
import pytest

from runtime.core import RequestContext, Session
from runtime.core._requests import Batch, RequestTable
from runtime.protocol import (
    INVALID_REQUEST,
    SERVER_OVERLOADED,
    JSONRPCError,
    Lifecycle,
    error_reply,
)


class _Peer:
    connection_id = "test"


class _Scope:
    cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


def _ctx(request_id: int | str, method: str = "tools/call") -> RequestContext:
    ctx = RequestContext(method, request_id, None, Session(), _Peer())  # type: ignore[arg-type]
    ctx.cancel_scope = _Scope()  # type: ignore[assignment]
    return ctx


def _cancel(request_id: object) -> msgspec.Raw:
    return msgspec.Raw(msgspec.json.encode({"requestId": request_id}))


def test_admits_until_the_in_flight_cap() -> None:
    table: RequestTable[object] = RequestTable(max_in_flight=2)
    life = Lifecycle()
    for request_id in (1, 2):
        assert table.refusal(request_id, "tools/call", life, in_batch=False) is None
        table.enter(_ctx(request_id))
    refused = table.refusal(3, "tools/call", life, in_batch=False)
    assert refused is not None and refused.code == SERVER_OVERLOADED
    assert refused.data == {"maxInFlight": 2}
    table.leave(_ctx(1))
    assert table.refusal(3, "tools/call", life, in_batch=False) is None


def test_tables_with_one_cap_share_one_prepared_refusal() -> None:
    """Built once per cap, not once per connection (issue 22 item 4: memory per idle
    connection); each table still answers with its own cap."""
    life = Lifecycle()
    refusals = []
    for cap in (1, 1, 3):
        table: RequestTable[object] = RequestTable(max_in_flight=cap)
        for request_id in range(cap):
            table.enter(_ctx(request_id))
        refused = table.refusal("next", "tools/call", life, in_batch=False)
        assert refused is not None and refused.data == {"maxInFlight": cap}
        refusals.append(refused)
    assert refusals[0] is refusals[1] and refusals[2] is not refusals[0]
    assert error_reply(refusals[0], 7) == (
        b'{"jsonrpc":"2.0","id":7,"error":{"code":-32010,"message":"Server overloaded: '
        b'too many requests in flight on this connection","data":{"maxInFlight":1}}}'
    )


def test_a_cap_of_one_refuses_the_second_and_a_cap_below_one_is_an_error() -> None:
    table: RequestTable[object] = RequestTable(max_in_flight=1)
    life = Lifecycle()
    assert table.refusal(1, "tools/call", life, in_batch=False) is None  # empty table
    table.enter(_ctx(1))
    refused = table.refusal(2, "tools/call", life, in_batch=False)
    assert refused is not None and refused.code == SERVER_OVERLOADED
    duplicate = table.refusal(1, "tools/call", life, in_batch=False)
    assert duplicate is not None and duplicate.code == INVALID_REQUEST  # named before the cap
    with pytest.raises(ValueError, match="at least 1"):
        RequestTable(max_in_flight=0)


def test_a_duplicate_id_is_refused_but_1_and_string_1_differ() -> None:
    table: RequestTable[object] = RequestTable(max_in_flight=8)
    life = Lifecycle()
    table.enter(_ctx(1))
    refused = table.refusal(1, "tools/call", life, in_batch=False)
    assert refused is not None and refused.code == INVALID_REQUEST
    assert table.refusal("1", "tools/call", life, in_batch=False) is None


def test_a_table_whose_transport_judges_ids_leaves_them_to_it() -> None:
    """``judges_ids=False`` (an HTTP session refuses an id another POST waits for, over a
    longer span than this table sees): a request is judged once, there. One whose client
    cancelled it may be released there before it unwound here; the request that takes its
    id then is the one in flight, whichever leaves first."""
    table: RequestTable[object] = RequestTable(max_in_flight=8, judges_ids=False)
    life = Lifecycle()
    first, second = _ctx(1), _ctx(1)
    table.enter(first)
    assert table.refusal(1, "tools/call", life, in_batch=False) is None
    table.enter(second)
    table.leave(first)  # (the cancelled one unwinds after the second started)
    assert len(table) == 1
    assert table.cancel(_cancel(1), life) is second
    table.leave(second)
    assert len(table) == 0


def test_lifecycle_rules_come_first() -> None:
    table: RequestTable[object] = RequestTable(max_in_flight=8)
    refused = table.refusal(1, "initialize", Lifecycle(), in_batch=True)
    assert refused is not None and "batch" in refused.message


def test_cancel_marks_the_request_and_spares_initialize() -> None:
    table: RequestTable[object] = RequestTable(max_in_flight=8)
    life = Lifecycle()
    call, init = _ctx(1), _ctx(2, "initialize")
    table.enter(call)
    table.enter(init)
    assert table.cancel(_cancel(1), life) is call and call.no_reply
    assert table.cancel(_cancel(2), life) is None and not init.no_reply
    assert table.cancel(_cancel(99), life) is None  # finished or unknown: ignored
    assert table.cancel(None, life) is None
    with pytest.raises(JSONRPCError):
        table.cancel(msgspec.Raw(b"[1]"), life)


def test_the_servers_own_requests_get_fresh_ids_and_their_answers() -> None:
    table: RequestTable[str] = RequestTable(max_in_flight=8)
    first, second = table.expect("a"), table.expect("b")
    assert first != second
    assert table.answered(first) == "a" and table.answered(second) == "b"
    assert table.answered(None) is None and table.answered(str(first)) is None
    table.forget(first)
    assert table.answered(first) is None and table.waiting() == ["b"]


def test_activity_reports_when_the_last_one_finished() -> None:
    table: RequestTable[object] = RequestTable(max_in_flight=8)
    table.started()
    table.started()
    assert not table.finished()
    assert table.finished()


def test_a_batch_replies_in_item_order_once_every_item_is_done() -> None:
    batch = Batch([msgspec.Raw(b"1"), msgspec.Raw(b"2"), msgspec.Raw(b"3")])
    batch.unfinished += 1  # one item suspended
    batch.replies[2] = b"c"
    batch.replies[0] = b"a"
    assert not batch.item_done()  # the walk is over
    assert batch.item_done()  # the suspended item finished
    assert batch.reply() == b"[a,c]"
    assert Batch([msgspec.Raw(b"1")]).reply() is None  # notifications only: no reply
