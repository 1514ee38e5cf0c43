"""One builder per error, each pinned by the bytes it puts on the wire; every code has one.

Where a module of the server used to build one of these errors by hand, the bytes below are
the ones it sent: building it in ``runtime.protocol`` changed no byte on the wire.
"""

from __future__ import annotations

import pytest

from runtime import protocol
from runtime.protocol import (
    JSONRPCError,
    ResourceNotFoundError,
    bad_request_state,
    batch_forbidden,
    cancellation_unconfirmed,
    error_reply,
    malformed_error_object,
    missing_capability,
    relayed_error,
    resource_not_found,
    task_cancelled,
    task_ended,
    unknown_task,
)

WIRE = [
    (
        unknown_task("t" * 120),
        b'{"code":-32602,"message":"Unknown task","data":{"taskId":"' + b"t" * 100 + b'"}}',
    ),
    (
        task_ended("t1", "completed"),
        b'{"code":-32602,"message":"Task is already completed","data":{"taskId":"t1"}}',
    ),
    (
        task_cancelled("t1"),
        b'{"code":-32602,"message":"Task was cancelled","data":{"taskId":"t1"}}',
    ),
    (
        cancellation_unconfirmed("t1", "the replica running it"),
        b'{"code":-32603,"message":"Task cancellation not confirmed by the replica running it",'
        b'"data":{"taskId":"t1"}}',
    ),
    (
        relayed_error(-32099, "theirs", {"x": 1}),
        b'{"code":-32099,"message":"theirs","data":{"x":1}}',
    ),
    (
        relayed_error(True, 5),
        b'{"code":-32603,"message":"5"}',
    ),
    (
        batch_forbidden("Invalid Request: no batches here"),
        b'{"code":-32600,"message":"Invalid Request: no batches here"}',
    ),
    (
        malformed_error_object("client"),
        b'{"code":-32600,"message":"Malformed error object from client"}',
    ),
    (
        resource_not_found("file:///x"),
        b'{"code":-32002,"message":"Resource not found","data":{"uri":"file:///x"}}',
    ),
    (
        resource_not_found("file:///x", "No such note", modern=True),
        b'{"code":-32602,"message":"No such note","data":{"uri":"file:///x"}}',
    ),
    (
        bad_request_state("requestState has expired"),
        b'{"code":-32602,"message":"requestState has expired"}',
    ),
    (
        missing_capability("Missing required client capability", {"extensions": {"e": {}}}),
        b'{"code":-32021,"message":"Missing required client capability",'
        b'"data":{"requiredCapabilities":{"extensions":{"e":{}}}}}',
    ),
]


@pytest.mark.parametrize(("error", "wire"), WIRE)
def test_each_builder_puts_these_bytes_on_the_wire(error: JSONRPCError, wire: bytes) -> None:
    assert bytes(error_reply(error, 1)) == b'{"jsonrpc":"2.0","id":1,"error":%b}' % wire


def test_a_resource_not_found_error_names_its_uri() -> None:
    """``resource_not_found`` re-words a resource function's ``ResourceNotFoundError`` for
    the request's era; it keeps the URI and the message the function gave."""
    raised = ResourceNotFoundError("notes://a", "No such note")
    assert raised.uri == "notes://a"
    modern = resource_not_found(raised.uri, raised.message, modern=True)
    assert (modern.code, modern.message, modern.data) == (
        protocol.INVALID_PARAMS,
        "No such note",
        raised.data,
    )


#: A builder per code: one call of each, named by the code it answers with.
BUILT = {
    protocol.PARSE_ERROR: protocol.parse_error("x"),
    protocol.INVALID_REQUEST: protocol.invalid_request("x"),
    protocol.METHOD_NOT_FOUND: protocol.method_not_found("x"),
    protocol.INVALID_PARAMS: protocol.invalid_params("x"),
    protocol.INTERNAL_ERROR: protocol.internal_error(),
    protocol.CONNECTION_CLOSED: protocol.connection_closed(),
    protocol.REQUEST_TIMEOUT: protocol.request_timeout(1.0),
    protocol.RESOURCE_NOT_FOUND: protocol.resource_not_found("x"),
    protocol.FORBIDDEN: protocol.forbidden("x"),
    protocol.SERVER_OVERLOADED: protocol.overloaded("x"),
    protocol.HEADER_MISMATCH: protocol.header_mismatch("x"),
    protocol.MISSING_CLIENT_CAPABILITY: protocol.missing_capability("x", {}),
    protocol.UNSUPPORTED_PROTOCOL_VERSION: protocol.unsupported_version("x", ["y"]),
}


def test_every_error_code_has_a_builder() -> None:
    codes = {
        getattr(protocol, name)
        for name in protocol.__all__
        if name.isupper()
        and type(getattr(protocol, name)) is int
        and -32768 <= getattr(protocol, name) <= -32000
    }
    assert codes == set(BUILT)
    assert all(error.code == code for code, error in BUILT.items())
