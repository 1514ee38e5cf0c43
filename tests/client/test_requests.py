"""runtime.client's request table: ids out, answers in, failures after a loss, and the server's
requests (duplicates, the cap, cancellation). Plain bookkeeping, driven here without trio,
as the server's RequestTable is (tests/core/test_requests.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import msgspec
import pytest

from runtime.client import BadMessage, TransportLost
from runtime.client._outgoing import Outgoing
from runtime.client._requests import Outcome, Pending, RequestTable
from runtime.protocol import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    SERVER_OVERLOADED,
    error_reply,
)


class _Event:
    """A waiter as the table sees one (``trio.Event`` in the conversation)."""

    def __init__(self) -> None:
        self.sets = 0

    def set(self) -> None:
        self.sets += 1

    def is_set(self) -> bool:
        return self.sets > 0


class _Scope:
    cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


def _pending(
    request_id: object, method: str = "tools/call", *, repeatable: bool = False
) -> Pending:
    out = Outgoing(b"{}", method, request_id, repeatable=repeatable, expects_response=True)
    return Pending(out, _Event())


def _raw(value: object) -> msgspec.Raw:
    return msgspec.Raw(msgspec.json.encode(value))


def test_the_module_imports_no_trio() -> None:
    path = Path(__file__).resolve().parents[2] / "runtime" / "client" / "_requests.py"
    imported = {
        node.module if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert not {name for name in imported if name and name.split(".")[0] == "trio"}


def test_ids_go_out_one_by_one_from_one() -> None:
    table: RequestTable[_Scope] = RequestTable()
    assert [table.next_id() for _ in range(3)] == [1, 2, 3]
    assert RequestTable().next_id() == 1  # each client counts its own


def test_an_answer_settles_its_request_once_and_wakes_it() -> None:
    table: RequestTable[_Scope] = RequestTable()
    pending = _pending(1)
    table.open(pending)
    assert table.answer(1, _raw({"ok": True}), None) is pending
    assert (
        isinstance(pending.outcome, Outcome)
        and bytes(pending.outcome.result or b"") == b'{"ok":true}'
    )
    assert pending.done.sets == 1  # type: ignore[attr-defined]
    # A second answer to the same id (a replay, a hostile server) changes nothing.
    assert table.answer(1, None, _raw({"code": -1, "message": "late"})) is pending
    assert bytes(pending.outcome.result or b"") == b'{"ok":true}' and pending.outcome.error is None
    assert pending.done.sets == 1  # type: ignore[attr-defined]


def test_an_answer_for_no_request_is_none_and_ids_keep_their_types() -> None:
    table: RequestTable[_Scope] = RequestTable()
    pending = _pending(1)
    table.open(pending)
    assert table.answer(2, _raw({}), None) is None  # never ours, or late
    assert table.answer("1", _raw({}), None) is None  # "1" is not 1 (JSON-RPC 2.0)
    assert not pending.done.is_set()
    table.close(pending)
    assert table.answer(1, _raw({}), None) is None  # closed: a late answer
    assert len(table) == 0


def test_close_takes_out_only_its_own_request() -> None:
    table: RequestTable[_Scope] = RequestTable()
    first, second = _pending(5), _pending(5)
    table.open(first, "progress-5")
    table.open(second, "progress-5")  # the same id again: the newer one is the table's
    table.close(first, "progress-5")
    assert table.get(5) is second and table.by_token("progress-5") is second
    table.close(second, "progress-5")
    assert table.get(5) is None and table.by_token("progress-5") is None
    table.close(second, "progress-5")  # idempotent


def test_progress_tokens_name_their_request() -> None:
    table: RequestTable[_Scope] = RequestTable()
    pending = _pending(3)
    table.open(pending, "progress-3")
    assert table.by_token("progress-3") is pending
    assert table.by_token(None) is None and table.by_token(3) is None


def test_a_lost_link_fails_what_was_sent_and_cannot_be_repeated() -> None:
    table: RequestTable[_Scope] = RequestTable()
    sent = _pending(1, "tools/call")
    sent.generation = 1
    safe = _pending(2, "tools/list", repeatable=True)
    safe.generation = 1
    unsent = _pending(3, "tools/call")  # waiting for a link: generation -1
    for pending in (sent, safe, unsent):
        table.open(pending)
    table.fail_unrepeatable("connection reset")
    assert isinstance(sent.outcome, TransportLost)
    assert str(sent.outcome) == (
        "tools/call: the connection was lost before the answer (connection reset); "
        "not re-sent, it is not safe to repeat"
    )
    assert safe.outcome is None and unsent.outcome is None
    # The new link (generation 2) gets the repeatable request again, once.
    assert table.to_resend(2) == [safe] and safe.generation == 2
    assert table.to_resend(2) == []


def test_to_resend_skips_what_already_failed() -> None:
    table: RequestTable[_Scope] = RequestTable()
    failed = _pending(1, "tools/list", repeatable=True)
    failed.generation = 1
    table.open(failed)
    failed.deliver(TransportLost("gone"))
    assert table.to_resend(2) == []


def test_a_message_too_large_fails_every_request_sent_on_the_link() -> None:
    table: RequestTable[_Scope] = RequestTable()
    sent = _pending(1, "tools/list", repeatable=True)
    sent.generation = 4
    unsent = _pending(2, "tools/list", repeatable=True)
    table.open(sent)
    table.open(unsent)
    table.fail_sent(BadMessage("too large"))
    assert isinstance(sent.outcome, BadMessage) and unsent.outcome is None


def test_fail_and_fail_all() -> None:
    table: RequestTable[_Scope] = RequestTable()
    one, two = _pending(1), _pending(2)
    table.open(one)
    table.open(two)
    table.fail(1, TransportLost("the POST broke"))
    table.fail(99, TransportLost("nobody"))  # an id the table does not hold: ignored
    assert isinstance(one.outcome, TransportLost) and two.outcome is None
    table.fail_all(TransportLost("the client is closed"))
    assert str(one.outcome) == "the POST broke"  # the first outcome stays
    assert str(two.outcome) == "the client is closed"


# -- the server's requests ------------------------------------------------------------------


def test_a_duplicate_id_is_refused_while_the_first_is_served() -> None:
    table: RequestTable[_Scope] = RequestTable()
    assert table.refusal(7, params_readable=True) is None
    scope = _Scope()
    table.enter(7, scope)
    refused = table.refusal(7, params_readable=True)
    assert refused is not None and refused.code == INVALID_REQUEST
    assert error_reply(refused, 7) == (
        b'{"jsonrpc":"2.0","id":7,"error":{"code":-32600,'
        b'"message":"Invalid Request: Duplicate request id 7 is in flight"}}'
    )
    assert table.refusal("7", params_readable=True) is None  # another id
    table.leave(7, scope)
    assert table.refusal(7, params_readable=True) is None


def test_past_the_cap_the_same_prepared_refusal_names_the_limit() -> None:
    table: RequestTable[_Scope] = RequestTable(max_server_requests=2)
    for request_id in (1, 2):
        table.enter(request_id, _Scope())
    first = table.refusal(3, params_readable=True)
    second = table.refusal(4, params_readable=True)
    assert first is second and first is not None and first.code == SERVER_OVERLOADED
    assert error_reply(first, 3) == (
        b'{"jsonrpc":"2.0","id":3,"error":{"code":-32010,"message":"Client overloaded: 2 '
        b'server-to-client requests are being answered (max_server_requests)",'
        b'"data":{"maxServerRequests":2}}}'
    )
    # A duplicate is told as a duplicate even at the cap.
    duplicate = table.refusal(1, params_readable=True)
    assert duplicate is not None and duplicate.code == INVALID_REQUEST
    assert table.most_serving == 2 and table.serving == 2


def test_params_nested_too_deeply_are_refused_last() -> None:
    table: RequestTable[_Scope] = RequestTable(max_server_requests=1)
    refused = table.refusal(1, params_readable=False)
    assert refused is not None and refused.code == INVALID_PARAMS
    assert refused.message == "Invalid params: nested too deeply"
    table.enter(2, _Scope())
    over = table.refusal(1, params_readable=False)
    assert over is not None and over.code == SERVER_OVERLOADED


def test_one_warning_per_burst_over_the_cap() -> None:
    table: RequestTable[_Scope] = RequestTable(max_server_requests=1)
    scope = _Scope()
    table.enter(1, scope)
    assert [table.over_cap() for _ in range(3)] == [True, False, False]
    table.leave(1, scope)  # below the cap: the burst is over
    table.enter(2, _Scope())
    assert table.over_cap() is True


def test_cancellation_finds_only_a_request_being_served() -> None:
    table: RequestTable[_Scope] = RequestTable()
    scope = _Scope()
    table.enter("a", scope)
    table.enter(5, _Scope())
    assert table.cancel("a") is scope
    assert table.cancel(5) is not None
    assert table.cancel("5") is None  # ids keep their types
    assert table.cancel(True) is None and table.cancel(5.0) is None and table.cancel(None) is None
    assert table.cancel("b") is None  # unknown or finished: the race is expected
    table.leave("a", scope)
    assert table.cancel("a") is None


def test_leave_is_for_the_scope_that_entered() -> None:
    table: RequestTable[_Scope] = RequestTable()
    first, second = _Scope(), _Scope()
    table.enter(1, first)
    table.leave(1, second)  # not the one served under id 1
    assert table.cancel(1) is first


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "8"])
def test_max_server_requests_is_an_int_of_at_least_one(bad: object) -> None:
    with pytest.raises(ValueError, match="max_server_requests must be"):
        RequestTable(max_server_requests=bad)  # type: ignore[arg-type]
