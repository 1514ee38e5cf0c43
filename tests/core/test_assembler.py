"""runtime.core.Assembler: the one place a request becomes its RequestContext, admitted (or
refused) by its connection's table, under its deadline. Real objects, no I/O; the clock is
trio's (a deadline is read inside ``trio.run``)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

from runtime.core import Dispatcher, RequestContext, Session
from runtime.core._assembler import Assembler
from runtime.core._requests import RequestTable
from runtime.protocol import (
    INITIALIZE,
    INVALID_REQUEST,
    Envelope,
    Refusal,
    decode_frame,
    select_era,
)

ROOT = Path(__file__).resolve().parents[2]


class _Peer:
    connection_id = "c7"


def _request(request_id: Any, method: str = "tools/call", params: Any = None) -> Envelope:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    found = decode_frame(msgspec.json.encode(message))
    assert isinstance(found, Envelope)
    return found


def _connection(
    timeout: float | None = 5.0,
) -> tuple[Assembler, RequestTable[object], list[Refusal]]:
    heard: list[Refusal] = []
    dispatcher = Dispatcher({})
    dispatcher.on_refusal = heard.append
    table: RequestTable[object] = RequestTable(max_in_flight=4)
    return Assembler(dispatcher, timeout, table), table, heard


def test_an_admitted_request_gets_its_context_under_its_deadline() -> None:
    assembler, _table, heard = _connection(timeout=5.0)
    session, peer = Session("stdio", "ann"), _Peer()
    env = _request("a", params={"name": "echo"})

    async def main() -> tuple[Any, float, float]:
        scope = trio.CancelScope()
        now = trio.current_time()
        ctx = assembler.assemble(env, session, peer, scope, None, True, False)  # type: ignore[arg-type]
        return ctx, now, scope.deadline

    ctx, now, deadline = trio.run(main)
    assert isinstance(ctx, RequestContext)
    assert (ctx.method, ctx.id, ctx.in_batch, ctx.takes_pieces) == ("tools/call", "a", True, False)
    assert isinstance(ctx.params, msgspec.Raw) and bytes(ctx.params) == b'{"name":"echo"}'
    assert ctx.session is session and ctx.peer is peer and ctx.prepared is None
    assert ctx.cancel_scope is not None and ctx.modern is False
    assert now + 5.0 <= deadline < now + 6.0  # request_timeout from the assembly on
    assert heard == []


def test_without_a_timeout_the_scope_keeps_its_deadline() -> None:
    assembler, _table, _heard = _connection(timeout=None)

    async def main() -> float:
        scope = trio.CancelScope()
        assembler.assemble(_request(1), Session(), _Peer(), scope)  # type: ignore[arg-type]
        return scope.deadline

    assert trio.run(main) == float("inf")


def test_a_refused_request_is_answered_and_observed() -> None:
    """A duplicate id in flight (JSON-RPC 2.0 section 4) and ``initialize`` inside a batch:
    the encoded refusal, with the request's id, and one Refusal for the observer."""
    assembler, table, heard = _connection()
    session = Session("http", "bob")
    first = assembler.assemble(_request(3), session, _Peer())  # type: ignore[arg-type]
    assert isinstance(first, RequestContext)
    table.enter(first)  # (it suspended: in flight)
    duplicate = assembler.assemble(_request(3), session, _Peer())  # type: ignore[arg-type]
    assert isinstance(duplicate, bytes)
    reply = msgspec.json.decode(duplicate)
    assert reply["id"] == 3 and reply["error"]["code"] == INVALID_REQUEST
    in_batch = assembler.assemble(_request(4, INITIALIZE), session, _Peer(), in_batch=True)  # type: ignore[arg-type]
    assert isinstance(in_batch, bytes) and msgspec.json.decode(in_batch)["id"] == 4
    assert [(r.code, r.method, r.request_id, r.connection_id, r.transport) for r in heard] == [
        (INVALID_REQUEST, "tools/call", 3, "c7", "http"),
        (INVALID_REQUEST, INITIALIZE, 4, "c7", "http"),
    ]
    assert heard[0].principal == "bob"


def test_a_lone_request_is_never_refused_and_keeps_its_session_lazy() -> None:
    made: list[Session] = []

    def make() -> Session:
        made.append(Session("http"))
        return made[-1]

    modern = select_era(
        {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    )
    lone = Assembler()
    for _ in range(2):  # the same id twice: nothing to collide with
        ctx = lone.assemble(_request(9), make, _Peer(), None, None, False, True, modern)  # type: ignore[arg-type]
        assert isinstance(ctx, RequestContext)
        assert ctx.modern is True and ctx.takes_pieces is True and ctx.cancel_scope is None
    assert made == []  # made only when a handler asks
    assert isinstance(ctx.session, Session) and made == [ctx.session]


def _calls_of(tree: ast.AST) -> list[tuple[str, str | None]]:
    """(callee name, enclosing function) of every call in ``tree``."""
    found: list[tuple[str, str | None]] = []

    def walk(node: ast.AST, function: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            inner = function
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                inner = child.name
            if isinstance(child, ast.Call):
                callee = child.func
                if isinstance(callee, ast.Name):
                    found.append((callee.id, inner))
                elif isinstance(callee, ast.Attribute):
                    found.append((callee.attr, inner))
            walk(child, inner)

    walk(tree, None)
    return found


@pytest.mark.parametrize("callee", ["RequestContext", "refusal"])
def test_requests_are_assembled_in_one_place(callee: str) -> None:
    """Of the product code, only the assembler builds a request's context and asks the
    request table for a refusal; the one other context is a notification's (no id, no
    admission, no deadline: ``Reader._on_notification``)."""
    places = set()
    for package in ("runtime", "handlers"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for name, function in _calls_of(ast.parse(path.read_text())):
                if name == callee:
                    places.add((str(path.relative_to(ROOT)), function))
    allowed = {("runtime/core/_assembler.py", "assemble")}
    if callee == "RequestContext":
        allowed.add(("runtime/core/_reader.py", "_on_notification"))
    else:  # (the table's own method, and the HTTP handshake's session-level checks)
        places = {p for p in places if p[0].startswith("runtime/core/")}
    assert places == allowed
