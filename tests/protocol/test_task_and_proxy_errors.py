"""The builders of the task errors and of a proxy's errors: each error's code, message and
data spelled once, as they go on the wire (``error_reply`` encodes them)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from runtime.protocol import (
    JSONRPCError,
    cancellation_unconfirmed,
    error_reply,
    relayed_error,
    task_cancelled,
    task_ended,
    unknown_task,
    upstream_error,
    upstream_timeout,
)


def wire(error: JSONRPCError) -> Any:
    """The reply carrying ``error``, as its peer decodes it."""
    return msgspec.json.decode(error_reply(error, 7))


def test_task_errors() -> None:
    assert wire(unknown_task("t" * 300)) == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {"code": -32602, "message": "Unknown task", "data": {"taskId": "t" * 100}},
    }
    assert wire(task_ended("t1", "failed"))["error"] == {
        "code": -32602,
        "message": "Task is already failed",
        "data": {"taskId": "t1"},
    }
    assert wire(task_cancelled("t1"))["error"] == {
        "code": -32602,
        "message": "Task was cancelled",
        "data": {"taskId": "t1"},
    }
    assert wire(cancellation_unconfirmed("t1", "the remote (status working)"))["error"] == {
        "code": -32603,
        "message": "Task cancellation not confirmed by the remote (status working)",
        "data": {"taskId": "t1"},
    }


def test_a_proxys_errors() -> None:
    unreachable = upstream_error("the remote MCP server is unreachable: gone", {"attempts": 3})
    assert wire(unreachable)["error"] == {
        "code": -32603,
        "message": "the remote MCP server is unreachable: gone",
        "data": {"attempts": 3},
    }
    assert wire(upstream_timeout("tools/call", 1.5, "call_timeout"))["error"] == {
        "code": -32001,
        "message": "Request timed out: the remote MCP server did not answer tools/call "
        "within 1.5 s (call_timeout)",
        "data": {"timeoutSeconds": 1.5, "limit": "call_timeout"},
    }


@pytest.mark.parametrize("code", [True, 1.5, "-32000", None, [1]])
def test_a_relayed_error_code_that_is_not_an_integer_is_internal_error(code: object) -> None:
    """JSON-RPC 2.0 section 5.1: the code is an integer; Python counts True as one."""
    error = relayed_error(code, 12, {"x": 1})
    assert (error.code, error.message, error.data) == (-32603, "12", {"x": 1})


def test_a_relayed_error_keeps_an_integer_code() -> None:
    error = relayed_error(-32099, "busy", None)
    assert (error.code, error.message, error.data) == (-32099, "busy", None)
