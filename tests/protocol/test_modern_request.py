"""runtime.protocol.modern_request: select_era for a caller that read the version already
(the HTTP transport's header rules): the same readings and the same refusals, in order."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.protocol import (
    INVALID_PARAMS,
    META_CLIENT_CAPABILITIES,
    META_PROTOCOL_VERSION,
    UNSUPPORTED_PROTOCOL_VERSION,
    JSONRPCError,
    modern_request,
    select_era,
)


def _outcome(call: Any) -> Any:
    try:
        return call()
    except JSONRPCError as exc:
        return (exc.code, exc.message, exc.data)


@pytest.mark.parametrize(
    "meta",
    [
        {META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {"x": {}}},
        {META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: []},
        {META_PROTOCOL_VERSION: "2026-07-28"},
        {META_PROTOCOL_VERSION: "v999", META_CLIENT_CAPABILITIES: {}},
        {META_PROTOCOL_VERSION: "v999"},  # -32022 is judged before the capabilities
        {META_PROTOCOL_VERSION: "2025-11-25", META_CLIENT_CAPABILITIES: {}},
    ],
)
def test_it_reads_and_refuses_as_select_era(meta: dict[str, Any]) -> None:
    version = meta[META_PROTOCOL_VERSION]
    assert _outcome(lambda: modern_request(version, meta)) == _outcome(lambda: select_era(meta))


def test_its_refusals_carry_their_codes() -> None:
    with pytest.raises(JSONRPCError) as info:
        modern_request("v999", {META_PROTOCOL_VERSION: "v999"})
    assert info.value.code == UNSUPPORTED_PROTOCOL_VERSION
    with pytest.raises(JSONRPCError) as info:
        modern_request("2026-07-28", {META_PROTOCOL_VERSION: "2026-07-28"})
    assert info.value.code == INVALID_PARAMS


def test_a_modern_request_keeps_its_meta() -> None:
    meta = {META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}, "k": 1}
    modern = modern_request("2026-07-28", meta)
    assert modern.version == "2026-07-28" and modern.capabilities == {} and modern.meta is meta
