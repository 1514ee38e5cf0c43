"""runtime.protocol.Lifecycle: the handshake state machine, fed events, no trio."""

from __future__ import annotations

import pytest

from runtime.protocol import (
    INITIALIZING,
    INVALID_REQUEST,
    LATEST_HANDSHAKE_VERSION,
    NEW,
    OPERATING,
    JSONRPCError,
    Lifecycle,
    batch_refusal,
)


def test_initialize_then_initialized_walks_the_states() -> None:
    life = Lifecycle()
    assert (life.state, life.version) == (NEW, None)
    assert life.initialize("2025-06-18") == "2025-06-18"
    assert (life.state, life.version) == (INITIALIZING, "2025-06-18")
    life.initialized()
    assert life.state == OPERATING


def test_an_unknown_version_negotiates_the_latest() -> None:
    life = Lifecycle()
    assert life.initialize("1999-01-01") == LATEST_HANDSHAKE_VERSION


def test_a_second_initialize_is_refused_and_changes_nothing() -> None:
    life = Lifecycle()
    life.initialize("2025-03-26")
    with pytest.raises(JSONRPCError) as info:
        life.initialize("2025-11-25")
    assert info.value.code == INVALID_REQUEST
    assert info.value.message == "Session is already initialized"
    assert life.version == "2025-03-26"


def test_initialized_before_initialize_is_ignored() -> None:
    life = Lifecycle()
    life.initialized()
    assert life.state == NEW


def test_initialize_may_not_ride_in_a_batch() -> None:
    life = Lifecycle()
    refused = life.admit("initialize", in_batch=True)
    assert refused is not None and refused.code == INVALID_REQUEST
    assert life.admit("initialize", in_batch=False) is None
    assert life.admit("tools/list", in_batch=True) is None


def test_initialize_may_not_be_cancelled() -> None:
    assert not Lifecycle.may_cancel("initialize")
    assert Lifecycle.may_cancel("tools/call")


@pytest.mark.parametrize(
    ("version", "http", "allowed"),
    [
        ("2025-03-26", True, True),
        ("2025-06-18", True, False),
        ("2025-11-25", True, False),
        (None, True, False),
        ("2025-11-25", False, True),
        (None, False, True),
    ],
)
def test_batches_follow_the_revision_over_http_only(
    version: str | None, http: bool, allowed: bool
) -> None:
    assert (batch_refusal(version, http=http) is None) is allowed
    life = Lifecycle()
    if version is not None:
        life.version = version
    assert (life.batches(http=http) is None) is allowed
