"""Every client method against our own server, over every transport, in both eras."""

from __future__ import annotations

import functools
import logging
from typing import Any

import pytest
import trio

from runtime.client import (
    CallToolResult,
    ClientError,
    PeerError,
    RequestTimeout,
    Task,
    TextContent,
    open_client,
)

from .targets import TRANSPORTS, serve_target

ERAS = ["modern", "handshake"]


async def _elicit(params: dict[str, Any]) -> dict[str, Any]:
    if params.get("mode") == "url":
        return {"action": "accept"}
    return {"action": "accept", "content": {"ok": True}}


async def _sample(params: dict[str, Any]) -> dict[str, Any]:
    text = params["messages"][0]["content"]["text"]
    return {"role": "assistant", "content": {"type": "text", "text": text.upper()}, "model": "m"}


async def _roots(params: dict[str, Any]) -> dict[str, Any]:
    return {"roots": [{"uri": "file:///a"}, {"uri": "file:///b"}]}


async def _logged(caplog: pytest.LogCaptureFixture, text: str, timeout: float = 5) -> None:
    """Wait until a log record containing ``text`` appears (the server's stderr comes
    back through the client's logger, line by line, asynchronously)."""
    with trio.fail_after(timeout):
        while not any(text in record.getMessage() for record in caplog.records):  # noqa: ASYNC110
            await trio.sleep(0.05)


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_core_methods_over_every_transport(kind: str, era: str) -> None:
    with trio.fail_after(30):
        async with (
            serve_target(kind) as (target, framing),
            open_client(
                target,
                era=era,
                framing=framing,  # type: ignore[arg-type]
            ) as client,
        ):
            assert client.era == era
            assert client.description is not None
            assert client.description.server_info is not None
            assert client.description.server_info.name == "client-test"
            assert client.description.instructions == "A server for the client tests."
            tools = await client.all_tools()
            assert [t.name for t in tools][:3] == ["echo", "add", "flags"]
            result = await client.call_tool("add", {"a": 2, "b": 40})
            assert result.text == "42" and not result.is_error
            assert result.structured_content == {"result": 42}
            failed = await client.call_tool("fail", {"message": "nope"})
            assert failed.is_error and "nope" in failed.text
            read = await client.read_resource("greeting://ada")
            assert read.contents[0].text == "Hello, ada!"
            prompt = await client.get_prompt("review", {"code": "x = 1"})
            content = prompt.messages[0].content
            assert isinstance(content, TextContent) and "x = 1" in content.text
            with pytest.raises(PeerError) as caught:
                await client.call_tool("no-such-tool", {})
            assert caught.value.code == -32602
            await client.ping()


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("kind", ["tcp-ndjson", "http"])
async def test_whole_surface(kind: str, era: str) -> None:
    progress: list[tuple[float, float | None, str | None]] = []
    with trio.fail_after(30):
        async with (
            serve_target(kind) as (target, framing),
            open_client(
                target,
                era=era,  # type: ignore[arg-type]
                framing=framing,
                sampling=_sample,
                elicitation=_elicit,
                roots=_roots,
            ) as client,
        ):
            resources = await client.all_resources()
            assert [r.uri for r in resources] == ["data://counter"]
            templates = await client.all_resource_templates()
            assert templates[0].uri_template == "greeting://{name}"
            prompts = await client.all_prompts()
            assert prompts[0].name == "review"
            assert [a.name for a in prompts[0].arguments] == ["code", "language"]
            completion = await client.complete(
                {"type": "ref/prompt", "name": "review"}, {"name": "language", "value": "p"}
            )
            assert completion.completion.values == ["python", "perl", "php"]
            done = await client.call_tool(
                "countdown", {"start": 3}, progress=lambda *a: progress.append(a)
            )
            assert done.text == "liftoff"
            assert [p[0] for p in progress] == [1, 2, 3]
            assert progress[-1][1:] == (3, "step 3")
            # Server-to-client input: a request (handshake) or an input round (modern).
            assert (await client.call_tool("confirm", {"question": "ok?"})).text == "accept:True"
            assert (await client.call_tool("visit", {"url": "https://x.test/"})).text == "accept"
            assert (await client.call_tool("summarize", {"text": "hi"})).text == "HI"
            assert (await client.call_tool("roots", {})).text == "file:///a,file:///b"
            await client.set_logging_level("debug")
            raw = await client.request("tools/list")
            assert raw["tools"][0]["name"] == "echo"
            # Tasks: asked for (handshake, 2025-11-25) or chosen by the server (modern).
            handle = await client.call_tool_as_task("build", {"target": "x"})
            if era == "handshake":
                assert isinstance(handle, Task)
                result = await client.task_result(handle.task_id)
                assert result["content"][0]["text"] == "built x"
                got = await client.get_task(handle.task_id)
                assert got.task_id == handle.task_id
                assert handle.task_id in [t.task_id for t in await client.list_tasks()]
            else:
                assert isinstance(handle, Task)
                result = await client.task_result(handle.task_id)
                assert result["content"][0]["text"] == "built x"
                # call_tool follows a task the server chose to the end.
                direct = await client.call_tool("build", {"target": "y"})
                assert isinstance(direct, CallToolResult) and direct.text == "built y"


async def test_handshake_subscribe_and_listen_deliver_updates() -> None:
    # Updates of one URI are coalesced by the server: one touch at a time, one update each.
    with trio.fail_after(20):
        async with (
            serve_target("tcp-ndjson") as (target, _),
            open_client(target, era="handshake") as client,
            client.listen(resource_uris=["data://counter"]) as updates,
        ):
            for _ in range(2):
                await client.call_tool("touch", {"count": 1})
                note = await updates.receive()
                assert note.method == "notifications/resources/updated"
                assert note.params["uri"] == "data://counter"


@pytest.mark.parametrize("kind", ["http", "tcp-ndjson", "ws", "stdio-content-length"])
async def test_modern_listen(kind: str) -> None:
    with trio.fail_after(20):
        async with (
            serve_target(kind) as (target, framing),
            open_client(target, era="modern", framing=framing) as client,
            client.listen(resource_uris=["data://counter"]) as updates,
        ):
            first = await updates.receive()
            assert first.method == "notifications/subscriptions/acknowledged"
            for _ in range(3):
                await client.call_tool("touch", {"count": 1})
                note = await updates.receive()
                assert note.method == "notifications/resources/updated"
                assert note.params["_meta"]["io.modelcontextprotocol/subscriptionId"]


@pytest.mark.parametrize("era", ERAS)
async def test_batch_over_a_stream_transport(era: str) -> None:
    with trio.fail_after(20):
        async with (
            serve_target("unix-content-length") as (target, framing),
            open_client(
                target,
                era=era,
                framing=framing,  # type: ignore[arg-type]
            ) as client,
        ):
            results = await client.batch(
                [
                    ("tools/list", None),
                    ("no/such", None),
                    ("resources/read", {"uri": "data://counter"}),
                ]
            )
            assert results[0]["tools"][0]["name"] == "echo"
            assert isinstance(results[1], PeerError) and results[1].code == -32601
            assert results[2]["contents"][0]["text"] == "0"


async def test_batch_refused_where_the_revision_forbids_it() -> None:
    with trio.fail_after(20):
        async with serve_target("http") as (target, _), open_client(target, era="modern") as client:
            with pytest.raises(ClientError, match="do not allow batches"):
                await client.batch([("tools/list", None)])


async def test_timeout_cancels_on_the_server(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mcp_runtime.client.server")
    with trio.fail_after(20):
        async with (
            serve_target("stdio-ndjson") as (target, framing),
            open_client(target, era="handshake", framing=framing) as client,
        ):
            with pytest.raises(RequestTimeout):
                await client.call_tool("slow", {"seconds": 30, "tag": "t1"}, timeout=0.3)
            # The server saw notifications/cancelled and cancelled the tool (its stderr
            # comes back through the client's logger).
            await _logged(caplog, "cancelled slow tag=t1")
            # The connection is fine afterwards.
            assert (await client.call_tool("echo", {"text": "still here"})).text == "still here"


async def test_cancelling_the_caller_cancels_the_request(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mcp_runtime.client.server")
    with trio.fail_after(20):
        async with (
            serve_target("stdio-ndjson") as (target, framing),
            open_client(target, era="modern", framing=framing) as client,
        ):
            with trio.move_on_after(0.3):
                await client.call_tool("slow", {"seconds": 30, "tag": "t2"})
            await _logged(caplog, "cancelled slow tag=t2")


async def test_pagination_follows_cursors() -> None:
    from .targets import load_app

    app = load_app()
    app.cursors.page_size = 2
    with trio.fail_after(20):
        async with serve_target("tcp-ndjson", app) as (target, _), open_client(target) as client:
            first = await client.list_tools()
            assert len(first.tools) == 2 and first.next_cursor
            every = await client.all_tools()
            assert len(every) == len({t.name for t in every}) > 2


async def test_mcp_param_headers_are_mirrored_over_modern_http() -> None:
    """2026-07-28 "Schema Extension": arguments marked x-mcp-header go into Mcp-Param-*
    headers, which the server checks against the body (-32020 otherwise). Without a
    tools/list first, the client learns the tool from the -32020 and tries once more."""
    with trio.fail_after(20):
        async with (
            serve_target("http") as (target, _),
            open_client(target, era="modern") as client,
        ):
            result = await client.call_tool(
                "search", {"region": "eu-west", "query": "q", "limit": 3}
            )
            assert result.text == "eu-west:q:3"
            result = await client.call_tool("search", {"region": "Zürich ü", "query": "q"})
            assert result.text == "Zürich ü:q:10"


@pytest.mark.parametrize("era", ERAS)
async def test_task_cancel_and_input_through_tasks(era: str) -> None:
    with trio.fail_after(20):
        async with (
            serve_target("tcp-ndjson") as (target, _),
            open_client(target, era=era, elicitation=_elicit) as client,  # type: ignore[arg-type]
        ):
            handle = await client.call_tool_as_task("build", {"target": "z", "seconds": 30})
            assert isinstance(handle, Task) and handle.status == "working"
            await client.cancel_task(handle.task_id)
            with trio.fail_after(5):
                while (await client.get_task(handle.task_id)).status != "cancelled":  # noqa: ASYNC110
                    await trio.sleep(0.05)
            if era == "modern":
                # The server runs it as a task and asks for input on the way: call_tool
                # answers through tasks/update and returns the task's result.
                result = await client.call_tool("approve", {"item": "deploy"})
                assert result.text == "deploy:accept"
                # The same by hand: the task asks, update_task answers.
                task = await client.call_tool_as_task("approve", {"item": "x"})
                assert isinstance(task, Task)
                with trio.fail_after(5):
                    while (task := await client.get_task(task.task_id)).status != "input_required":  # noqa: ASYNC110
                        await trio.sleep(0.05)
                assert task.input_requests
                key = next(iter(task.input_requests))
                await client.update_task(task.task_id, {key: {"action": "decline"}})
                assert (await client.task_result(task.task_id))["content"][0]["text"] == "x:decline"


async def test_a_task_past_the_timeout_is_a_request_timeout() -> None:
    """call_tool follows a task the server chose under the call's timeout: past it, the
    caller gets the client's RequestTimeout naming the task, as for any request."""
    with trio.fail_after(20):
        async with (
            serve_target("tcp-ndjson") as (target, _),
            open_client(target, era="modern") as client,
        ):
            with pytest.raises(RequestTimeout) as timed_out:
                await client.call_tool("build", {"target": "t", "seconds": 30}, timeout=0.5)
            assert timed_out.value.method.startswith("task ")
            assert timed_out.value.timeout == 0.5


async def test_batches_over_http_in_a_2025_03_26_session() -> None:
    with trio.fail_after(20):
        async with (
            serve_target("http") as (target, _),
            open_client(target, era="handshake", handshake_version="2025-03-26") as client,
        ):
            assert client.protocol_version == "2025-03-26"
            results = await client.batch(
                [
                    ("tools/list", None),
                    ("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}),
                ]
            )
            assert results[0]["tools"][0]["name"] == "echo"
            assert results[1]["content"][0]["text"] == "3"


async def test_bearer_token_and_headers_reach_the_server() -> None:
    from runtime.transports import HttpError

    from .targets import load_app

    seen: list[dict[str, str]] = []

    async def authenticate(headers: dict[str, str]) -> str:
        seen.append(headers)
        if headers.get("authorization") != "Bearer s3cret":
            raise HttpError(401, "Unauthorized")
        return "alice"

    app = load_app()
    async with trio.open_nursery() as nursery:
        address = await nursery.start(functools.partial(app.serve_http, authenticate=authenticate))
        url = f"http://127.0.0.1:{address[1]}/mcp"
        with trio.fail_after(20):
            async with open_client(url, bearer_token="s3cret", headers={"X-Trace": "t1"}) as client:
                assert (await client.call_tool("echo", {"text": "in"})).text == "in"
            assert seen and seen[-1].get("x-trace") == "t1"
            with pytest.raises(PeerError, match="HTTP 401"):
                async with open_client(url, bearer_token="wrong", era="modern"):
                    pass
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("era", ERAS)
async def test_a_timeout_cancels_the_request_over_http(
    era: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """2026-07-28: the client closes the POST's stream; handshake era: it sends
    notifications/cancelled. Either way the tool is cancelled on the server."""
    with trio.fail_after(20):
        async with (
            serve_target("http") as (target, _),
            open_client(target, era=era) as client,  # type: ignore[arg-type]
        ):
            with pytest.raises(RequestTimeout):
                await client.call_tool("slow", {"seconds": 30, "tag": f"h-{era}"}, timeout=0.3)
            with trio.fail_after(5):
                while f"cancelled slow tag=h-{era}" not in capsys.readouterr().err:  # noqa: ASYNC110
                    await trio.sleep(0.05)
            assert (await client.call_tool("echo", {"text": "ok"})).text == "ok"


@pytest.mark.parametrize("era", ERAS)
async def test_server_log_messages_reach_the_logger_and_the_callback(
    era: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mcp_runtime.client.server")
    notes: list[Any] = []
    with trio.fail_after(20):
        async with (
            serve_target("tcp-ndjson") as (target, _),
            open_client(target, era=era, on_notification=notes.append) as client,  # type: ignore[arg-type]
        ):
            await client.set_logging_level("info")
            assert (await client.call_tool("chatty", {})).text == "said it"
            await _logged(caplog, "hello from the tool")
            assert any(n.method == "notifications/message" for n in notes)
            await client.notify("notifications/roots/list_changed")  # a plain notification
            assert (await client.call_tool("echo", {"text": "after"})).text == "after"


async def test_a_batch_timeout_cancels_its_unanswered_items(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="mcp_runtime.client.server")
    with trio.fail_after(20):
        async with (
            serve_target("stdio-ndjson") as (target, framing),
            open_client(target, era="handshake", framing=framing) as client,
        ):
            with pytest.raises(RequestTimeout):
                await client.batch(
                    [
                        ("tools/call", {"name": "echo", "arguments": {"text": "quick"}}),
                        ("tools/call", {"name": "slow", "arguments": {"seconds": 30, "tag": "b1"}}),
                    ],
                    timeout=0.5,
                )
            await _logged(caplog, "cancelled slow tag=b1")
