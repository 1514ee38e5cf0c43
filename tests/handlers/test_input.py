"""Asking the client for input: server-to-client requests (handshake era) and multi
round-trip requests with sealed requestState (2026-07-28)."""

from __future__ import annotations

import time
from typing import Any

import pytest
import trio

from runtime import Context, JSONRPCError, Server
from runtime.cli import load_target
from runtime.features import StateSealer
from runtime.testing import open_client

APP = load_target("examples/elicitation.py")
ELICIT = {"elicitation": {}}


async def test_handshake_era_sends_elicitation_requests() -> None:
    asked: list[tuple[str, Any]] = []

    async def on_request(method: str, params: Any) -> Any:
        asked.append((method, params))
        if "name" in params["message"]:
            return {"action": "accept", "content": {"name": "Ada"}}
        return {"action": "accept", "content": {"ok": True}}

    with trio.fail_after(10):
        async with open_client(APP, capabilities=ELICIT, on_request=on_request) as client:
            result = await client.call_tool("greet")
    assert result["content"][0]["text"] == "Hello, Ada!"
    method, params = asked[0]
    assert method == "elicitation/create"
    assert params["mode"] == "form" and params["requestedSchema"]["required"] == ["name"]


async def test_handshake_era_without_the_capability_is_refused() -> None:
    with trio.fail_after(10):
        async with open_client(APP) as client:
            with pytest.raises(JSONRPCError) as info:
                await client.call_tool("greet")
    assert info.value.code == -32021
    assert info.value.data == {"requiredCapabilities": {"elicitation": {}}}


async def _modern_call(client: Any, name: str, args: dict[str, Any], **extra: Any) -> Any:
    return await client.request("tools/call", {"name": name, "arguments": args, **extra})


async def test_modern_round_trips_resume_the_handler() -> None:
    with trio.fail_after(10):
        async with open_client(APP, protocol_version="2026-07-28", capabilities=ELICIT) as client:
            first = await _modern_call(client, "book_trip", {"destination": "Oslo"})
            assert first["resultType"] == "input_required"
            (key,) = first["inputRequests"]
            assert first["inputRequests"][key]["method"] == "elicitation/create"
            second = await _modern_call(
                client,
                "book_trip",
                {"destination": "Oslo"},
                inputResponses={key: {"action": "accept", "content": {"ok": True}}},
                requestState=first["requestState"],
            )
            assert second["resultType"] == "input_required"
            (key2,) = second["inputRequests"]
            assert key2 != key and "Window" in second["inputRequests"][key2]["params"]["message"]
            # The retry carries only the newest answer: the first comes back from the state.
            done = await _modern_call(
                client,
                "book_trip",
                {"destination": "Oslo"},
                inputResponses={key2: {"action": "accept", "content": {"seat": "aisle"}}},
                requestState=second["requestState"],
            )
            assert done["resultType"] == "complete"
            assert done["content"][0]["text"] == "Booked Oslo, aisle seat."


async def test_modern_state_is_bound_to_the_request_and_tamper_proof() -> None:
    with trio.fail_after(10):
        async with open_client(APP, protocol_version="2026-07-28", capabilities=ELICIT) as client:
            first = await _modern_call(client, "book_trip", {"destination": "Oslo"})
            state = first["requestState"]
            (key,) = first["inputRequests"]
            answer = {key: {"action": "accept", "content": {"ok": True}}}
            with pytest.raises(JSONRPCError) as info:  # other arguments
                await _modern_call(
                    client,
                    "book_trip",
                    {"destination": "Rome"},
                    inputResponses=answer,
                    requestState=state,
                )
            assert info.value.code == -32602 and "different request" in info.value.message
            payload, epoch, mac = state.split(".")
            forged = f"{payload[:-2]}AA.{epoch}.{mac}"
            with pytest.raises(JSONRPCError) as info:
                await _modern_call(
                    client,
                    "book_trip",
                    {"destination": "Oslo"},
                    inputResponses=answer,
                    requestState=forged,
                )
            assert info.value.code == -32602 and info.value.message == "Invalid requestState"
            with pytest.raises(JSONRPCError) as info:  # another tool
                await _modern_call(client, "greet", {}, requestState=state)
            assert info.value.code == -32602


def test_expired_state_is_rejected() -> None:
    sealer = StateSealer(b"k" * 32, ttl_seconds=0.01)
    state = sealer.seal("tools/call", "d", {"a": 1})
    assert sealer.unseal(state, "tools/call", "d") == {"a": 1}
    time.sleep(0.02)
    with pytest.raises(JSONRPCError, match="expired"):
        sealer.unseal(state, "tools/call", "d")
    # A shared secret lets another instance verify; another secret does not.
    assert StateSealer(b"k" * 32).unseal(sealer.seal("m", "d", {}), "m", "d") == {}
    with pytest.raises(JSONRPCError):
        StateSealer(b"x" * 32).unseal(sealer.seal("m", "d", {}), "m", "d")


async def test_modern_without_the_capability_is_refused() -> None:
    with trio.fail_after(10):
        async with open_client(APP, protocol_version="2026-07-28") as client:
            with pytest.raises(JSONRPCError) as info:
                await _modern_call(client, "greet", {})
    assert info.value.code == -32021


def test_state_is_bound_to_the_principal() -> None:
    from runtime.auth import AccessToken
    from runtime.features import principal_key

    alice = principal_key(AccessToken(subject="alice", scopes=frozenset(), client_id="app"))
    mallory = principal_key(AccessToken(subject="mallory", scopes=frozenset(), client_id="app"))
    assert alice == "alice|app" and principal_key(None) is None
    sealer = StateSealer(b"k" * 32)
    state = sealer.seal("tools/call", "d", {"a": 1}, alice)
    assert sealer.unseal(state, "tools/call", "d", alice) == {"a": 1}
    for other in (mallory, None):
        with pytest.raises(JSONRPCError, match="another principal"):
            sealer.unseal(state, "tools/call", "d", other)


def _sampling_app() -> Server:
    app = Server("sampling")

    @app.tool
    async def summarize(text: str, ctx: Context) -> str:
        roots = await ctx.list_roots()
        reply = await ctx.sample(
            [{"role": "user", "content": {"type": "text", "text": text}}],
            max_tokens=50,
            system_prompt="Be brief.",
        )
        return f"{reply['content']['text']} ({len(roots)} roots)"

    return app


async def test_sampling_and_roots_in_both_eras() -> None:
    asked: list[tuple[str, Any]] = []

    async def on_request(method: str, params: Any) -> Any:
        asked.append((method, params))
        if method == "roots/list":
            return {"roots": [{"uri": "file:///work", "name": "work"}]}
        return {"role": "assistant", "content": {"type": "text", "text": "short"}, "model": "m"}

    caps = {"sampling": {}, "roots": {}}
    with trio.fail_after(10):
        async with open_client(_sampling_app(), capabilities=caps, on_request=on_request) as c:
            result = await c.call_tool("summarize", {"text": "long text"})
        assert result["content"][0]["text"] == "short (1 roots)"
        assert [m for m, _ in asked] == ["roots/list", "sampling/createMessage"]
        assert asked[1][1]["maxTokens"] == 50 and asked[1][1]["systemPrompt"] == "Be brief."

        async with open_client(
            _sampling_app(), protocol_version="2026-07-28", capabilities=caps
        ) as modern:
            first = await modern.call_tool("summarize", {"text": "t"})
            (roots_key,) = first["inputRequests"]
            assert first["inputRequests"][roots_key]["method"] == "roots/list"
            second = await modern.request(
                "tools/call",
                {
                    "name": "summarize",
                    "arguments": {"text": "t"},
                    "inputResponses": {roots_key: {"roots": []}},
                    "requestState": first["requestState"],
                },
            )
            (sample_key,) = second["inputRequests"]
            assert second["inputRequests"][sample_key]["method"] == "sampling/createMessage"
            done = await modern.request(
                "tools/call",
                {
                    "name": "summarize",
                    "arguments": {"text": "t"},
                    "inputResponses": {
                        sample_key: {"role": "assistant", "content": {"type": "text", "text": "ok"}}
                    },
                    "requestState": second["requestState"],
                },
            )
            assert done["content"][0]["text"] == "ok (0 roots)"

        async with open_client(
            _sampling_app(), capabilities={"roots": {}}, on_request=on_request
        ) as no_sampling:
            with pytest.raises(JSONRPCError) as info:
                await no_sampling.call_tool("summarize", {"text": "t"})
        assert info.value.data == {"requiredCapabilities": {"sampling": {}}}


async def test_cancelling_the_asking_request_cancels_the_server_request() -> None:
    asked = trio.Event()

    async def on_request(method: str, params: Any) -> Any:
        asked.set()
        await trio.sleep(30)  # the user never answers

    with trio.fail_after(10):
        async with (
            open_client(APP, capabilities=ELICIT, on_request=on_request) as client,
            trio.open_nursery() as nursery,
        ):
            nursery.start_soon(client.request, "tools/call", {"name": "greet", "arguments": {}})
            await asked.wait()
            await client.notify("notifications/cancelled", {"requestId": 2})
            note = await client.wait_for_notification("notifications/cancelled")
            nursery.cancel_scope.cancel()
    assert note["params"] == {"requestId": 1, "reason": "cancelled"}


def _plain_tools_app() -> Server:
    """Async tools that take no Context: the shape ``tools/call`` awaits directly."""
    app = Server("plain-tools")

    @app.tool
    async def ask_both(city: str) -> str:
        from runtime import InputRequired

        raise InputRequired({"confirm": {"method": "elicitation/create", "params": {}}})

    @app.tool
    async def broken(city: str) -> str:
        raise RuntimeError(f"no weather for {city}")

    return app


async def test_a_tool_without_context_may_raise_input_required_in_the_modern_era() -> None:
    with trio.fail_after(10):
        async with open_client(_plain_tools_app(), protocol_version="2026-07-28") as client:
            first = await _modern_call(client, "ask_both", {"city": "Oslo"})
            assert first["resultType"] == "input_required"
            assert first["inputRequests"] == {
                "confirm": {"method": "elicitation/create", "params": {}}
            }
            # The sealed state is bound to this tool's arguments, as for a Context tool.
            with pytest.raises(JSONRPCError) as info:
                await _modern_call(
                    client, "ask_both", {"city": "Rome"}, requestState=first["requestState"]
                )
            assert info.value.code == -32602 and "different request" in info.value.message
            with pytest.raises(JSONRPCError) as info:
                await _modern_call(client, "ask_both", {"city": "Oslo"}, requestState="forged")
            assert info.value.code == -32602 and info.value.message == "Invalid requestState"


async def test_a_tool_without_context_failing_is_an_error_result_in_both_eras() -> None:
    with trio.fail_after(10):
        async with open_client(_plain_tools_app()) as client:
            asked = await client.call_tool("ask_both", {"city": "Oslo"})
            broken = await client.call_tool("broken", {"city": "Oslo"})
        async with open_client(_plain_tools_app(), protocol_version="2026-07-28") as client:
            modern = await _modern_call(client, "broken", {"city": "Oslo"})
    # Handshake era: no multi round-trip requests, so asking is a failure of the tool.
    assert asked["isError"] is True
    assert asked["content"][0]["text"].startswith("Error executing tool ask_both: ")
    for result in (broken, modern):
        assert result["isError"] is True
        assert result["content"] == [
            {"type": "text", "text": "Error executing tool broken: no weather for Oslo"}
        ]
    assert modern["resultType"] == "complete"


async def test_answers_without_sealed_state_are_ignored() -> None:
    """issue 16 item 5: answering a round the server never asked for (no requestState) must
    not let a client skip a confirmation. Such answers never reach the handler: the server
    asks its first question again (2026-07-28 mrtr, SEP-2322: unrequested information is
    ignored and missing answers are re-requested, not refused)."""
    with trio.fail_after(10):
        async with open_client(APP, protocol_version="2026-07-28", capabilities=ELICIT) as client:
            forged = {"elicitation-1": {"action": "accept", "content": {"ok": True}}}
            forged["elicitation-2"] = {"action": "accept", "content": {"seat": "aisle"}}
            result = await _modern_call(
                client, "book_trip", {"destination": "Oslo"}, inputResponses=forged
            )
            assert result["resultType"] == "input_required"
            (key,) = result["inputRequests"]
            assert key not in forged  # a fresh, unguessable key: the forged answers are moot


async def test_answers_for_keys_never_asked_are_ignored() -> None:
    with trio.fail_after(10):
        async with open_client(APP, protocol_version="2026-07-28", capabilities=ELICIT) as client:
            first = await _modern_call(client, "book_trip", {"destination": "Oslo"})
            (key,) = first["inputRequests"]
            answers = {key: {"action": "accept", "content": {"ok": True}}}
            # Also answering the next round's question before it was asked.
            answers["elicitation-2"] = {"action": "accept", "content": {"seat": "aisle"}}
            second = await _modern_call(
                client,
                "book_trip",
                {"destination": "Oslo"},
                inputResponses=answers,
                requestState=first["requestState"],
            )
            # The first answer counts; the pre-answer does not: the next round is asked.
            assert second["resultType"] == "input_required"
            (next_key,) = second["inputRequests"]
            assert next_key != key and next_key != "elicitation-2"


async def test_input_keys_are_not_guessable() -> None:
    keys = set()
    with trio.fail_after(10):
        async with open_client(APP, protocol_version="2026-07-28", capabilities=ELICIT) as client:
            for _ in range(3):
                first = await _modern_call(client, "book_trip", {"destination": "Oslo"})
                (key,) = first["inputRequests"]
                assert key.startswith("elicitation-") and len(key) >= len("elicitation-") + 16
                keys.add(key)
    assert len(keys) == 3
