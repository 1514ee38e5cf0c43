"""2026-07-28 POSTs whose request metadata is wrong: the status and the error, on the wire
(basic/transports/streamable-http "Server Validation"; basic/index "Request Metadata")."""

from __future__ import annotations

import trio

from .app import MODERN, make_app, modern_headers, serving
from .http_client import request

CAPS = "io.modelcontextprotocol/clientCapabilities"
VERSION = "io.modelcontextprotocol/protocolVersion"


def _body(meta: dict[str, object]) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": meta}}


async def test_meta_without_client_capabilities_is_400_with_32602() -> None:
    # C1: was -32602 with HTTP 200. Malformed request metadata is a bad request, like a
    # missing _meta (which was already 400), on the direct path and the streaming one.
    app, _ = make_app()
    accepts = ({}, {"accept": "application/json, text/event-stream"})
    with trio.fail_after(10):
        async with serving(app) as address:
            for accept in accepts:
                for caps in ({}, {CAPS: ["sampling"]}):
                    meta = {VERSION: MODERN, **caps}
                    response = await request(
                        address,
                        "POST",
                        headers={**modern_headers("tools/list"), **accept},
                        body=_body(meta),
                    )
                    assert response.status == 400, (accept, caps, response.body)
                    error = response.json()["error"]
                    assert error["code"] == -32602 and response.json()["id"] == 7
                    assert CAPS in error["message"]
            ok = await request(
                address,
                "POST",
                headers=modern_headers("tools/list"),
                body=_body({VERSION: MODERN, CAPS: {}}),
            )
            assert ok.status == 200


async def test_header_and_body_versions_that_disagree_are_32020_before_the_version() -> None:
    # C2: the body's v999.0.0 was judged first (-32022); a header that disagrees with the
    # body is a HeaderMismatch whatever the body says.
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            response = await request(
                address,
                "POST",
                headers=modern_headers("tools/list"),
                body=_body({VERSION: "v999.0.0", CAPS: {}}),
            )
            assert response.status == 400
            assert response.json()["error"]["code"] == -32020
            same = await request(
                address,
                "POST",
                headers=modern_headers("tools/list", **{"mcp-protocol-version": "v999.0.0"}),
                body=_body({VERSION: "v999.0.0", CAPS: {}}),
            )
            assert same.status == 400
            error = same.json()["error"]
            assert error["code"] == -32022 and MODERN in error["data"]["supported"]


async def test_mcp_name_is_checked_on_task_methods() -> None:
    # C4: Mcp-Name was not checked on tasks/* (SEP-2663 names them by task id).
    app, _ = make_app()
    caps = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    body = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "tasks/get",
        "params": {"taskId": "t-1", "_meta": {VERSION: MODERN, CAPS: caps}},
    }
    with trio.fail_after(10):
        async with serving(app) as address:
            for name in (None, "t-2"):
                response = await request(
                    address, "POST", headers=modern_headers("tasks/get", name), body=body
                )
                assert response.status == 400, (name, response.body)
                assert response.json()["error"]["code"] == -32020
            unknown = await request(
                address, "POST", headers=modern_headers("tasks/get", "t-1"), body=body
            )
            # The headers match: the request reaches the handler, which knows no such task.
            assert unknown.status == 200 and unknown.json()["error"]["code"] == -32602
