"""``runtime.transports.ServerPort``: the one typed port through which the network transports
reach the server (its typing is mypy's to check, its shape ``tests/test_layers.py``'s)."""

from __future__ import annotations

import pytest

import runtime.transports as transports
from runtime import Server
from runtime._compose import transport_port


def test_hooks_is_a_deprecated_name_of_the_port() -> None:
    with pytest.warns(DeprecationWarning, match="ServerPort"):
        assert transports.Hooks is transports.ServerPort


def test_the_composition_root_gives_every_member_of_the_port() -> None:
    """Each member the port declares is there on the server's port, callables callable."""
    port = transport_port(Server("port"))
    declared = [
        name
        for name in vars(transports.ServerPort)
        if not name.startswith("_") or name == "__annotations__"
    ]
    members = {name for name in declared if name != "__annotations__"}
    members |= set(transports.ServerPort.__annotations__)
    assert members >= {"serve_connection", "dispatch_one", "read_frame", "header_rules"}
    missing = [name for name in members if not hasattr(port, name)]
    assert missing == []
    session = port.new_session("http", None)
    assert session.protocol_version is None and session.shared_id is None
    assert port.export_session(session) is None  # (nothing negotiated yet)
