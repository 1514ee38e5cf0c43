"""The error builders either side of a connection uses when the other side misbehaves: one
builder per error, the bytes each one answers with."""

from __future__ import annotations

from runtime.protocol import (
    CONNECTION_CLOSED,
    INVALID_REQUEST,
    SERVER_OVERLOADED,
    client_overloaded,
    duplicate_request,
    error_reply,
    http_failure,
)


def test_a_duplicate_id_is_named_in_the_error() -> None:
    error = duplicate_request("r-1")
    assert error.code == INVALID_REQUEST and error.request_id == "r-1"
    assert error_reply(error) == (
        b'{"jsonrpc":"2.0","id":"r-1","error":{"code":-32600,'
        b'"message":"Invalid Request: Duplicate request id \'r-1\' is in flight"}}'
    )


def test_the_client_overloaded_is_the_servers_code_in_the_clients_words() -> None:
    error = client_overloaded("3 requests (max_server_requests)", maxServerRequests=3)
    assert error.code == SERVER_OVERLOADED
    assert error_reply(error, 9) == (
        b'{"jsonrpc":"2.0","id":9,"error":{"code":-32010,"message":"Client overloaded: '
        b'3 requests (max_server_requests)","data":{"maxServerRequests":3}}}'
    )
    assert client_overloaded("x").data is None


def test_an_http_failure_names_its_status() -> None:
    error = http_failure(502, "<html>bad gateway</html>", {"status": 502})
    assert error.code == CONNECTION_CLOSED
    assert error.message == "HTTP 502: <html>bad gateway</html>"
    assert error.data == {"status": 502}
    assert http_failure(401, "").data is None
