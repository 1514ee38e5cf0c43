"""The label rule itself: every method the server serves is an MCP method labelled as
itself; anything else is "unknown" (tests/observability/test_cardinality.py has it over the
real wire)."""

from __future__ import annotations

from runtime import Server
from runtime._compose import build_dispatcher
from runtime.middleware import UNKNOWN, method_label
from runtime.protocol import CLIENT_METHODS


def test_every_method_the_server_serves_is_labelled_as_itself() -> None:
    dispatcher = build_dispatcher(Server("all"))
    for method in (*dispatcher.requests, *dispatcher.notifications):
        assert method in CLIENT_METHODS
        assert method_label(method) == method
    assert method_label("made/up") == UNKNOWN
    assert method_label("notifications/cancelled") == "notifications/cancelled"
