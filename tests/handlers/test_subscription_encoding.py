"""A change is encoded once for every subscriber (issue 22 item 3): the bytes each one gets
are exactly what encoding its own notification would give."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from runtime._handlers import subscriptions
from runtime.protocol import encode_notification

SUB_ID = "io.modelcontextprotocol/subscriptionId"

CHANGES = [
    ("updated", "mem://a"),
    ("updated", 'file:///we"ird/\\path?q=\u00e9&x=\u2028'),
    ("list", "tools"),
    ("list", "resources"),
]


@pytest.mark.parametrize("change", CHANGES)
@pytest.mark.parametrize("request_id", [7, 0, -3, "listen-1", 'quo"te\\', ""])
def test_a_listens_copy_is_its_own_encoding(change: Any, request_id: Any) -> None:
    head, tail = subscriptions._encoded_around_id(change)
    spliced = head + msgspec.json.encode(request_id) + tail
    meta = {SUB_ID: request_id}
    assert spliced == encode_notification(*subscriptions._notification(change, meta))
    message = msgspec.json.decode(spliced)
    assert message["params"]["_meta"] == meta


@pytest.mark.parametrize("change", CHANGES)
def test_a_sessions_copy_is_its_own_encoding(change: Any) -> None:
    expected = encode_notification(*subscriptions._notification(change, None))
    assert subscriptions._encoded(change) == expected
