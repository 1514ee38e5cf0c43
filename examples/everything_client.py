"""Everything client: the client the official conformance suite drives (its client scenarios).

The suite (npm ``@modelcontextprotocol/conformance``, ``conformance client --command ...``)
starts a scenario server of its own, then runs this program with the server's URL as the
last argument and the scenario's name in ``MCP_CONFORMANCE_SCENARIO``; scenarios that need
data (the arguments of a call) put a JSON object in ``MCP_CONFORMANCE_CONTEXT``, and
``--spec-version`` arrives as ``MCP_CONFORMANCE_PROTOCOL_VERSION``: a dated revision up to
2025-11-25 means the ``initialize`` handshake, 2026-07-28 the stateless era, none means
"find out" (``era="auto"``). The suite judges what crosses the wire; this program only does
what a user of ``runtime.client`` would, with the public API alone. The authorization
scenarios (``auth/*``) log in with :class:`runtime.client.OAuth`: an authorization code through
a loopback redirect (the browser step an HTTP GET, as the suite's authorization servers
need no login page), pre-registered credentials, or client credentials from the context.

    python examples/everything_client.py http://127.0.0.1:3001/mcp   # MCP_CONFORMANCE_SCENARIO=...

``python -m tests.conformance --only client`` runs every client scenario through it.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from runtime.client import (
    Client,
    ClientError,
    EnterpriseIdentity,
    Implementation,
    LoopbackLogin,
    OAuth,
    open_client,
)

#: The revisions the suite runs statelessly (its ``STATELESS_SPEC_VERSIONS``): no
#: ``initialize``, every request carries its own ``_meta``.
STATELESS = {"2026-07-28"}

#: This client's Client ID Metadata Document: the suite's authorization servers that
#: support them take this URL as the client id (and never fetch it).
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"

Scenario = Callable[[Client, dict[str, Any]], Awaitable[None]]
SCENARIOS: dict[str, Scenario] = {}
#: How each authorization scenario logs in: the ``auth=`` for ``open_client`` (built from
#: the scenario's context), so that the scenario's body stays the same as without.
AUTH: dict[str, Callable[[dict[str, Any]], OAuth]] = {}
#: Work a scenario does while the client answers a server's question (between the rounds
#: of a 2026-07-28 input_required request).
while_asked: list[Callable[[], Awaitable[Any]]] = []


def scenario(*names: str) -> Callable[[Scenario], Scenario]:
    def register(run: Scenario) -> Scenario:
        for name in names:
            SCENARIOS[name] = run
        return run

    return register


async def sample(params: dict[str, Any]) -> dict[str, Any]:
    """Sampling: a fixed answer (no model behind this client)."""
    text = {"type": "text", "text": "This is a test response from the everything client."}
    return {"role": "assistant", "content": text, "model": "none", "stopReason": "endTurn"}


async def roots(params: dict[str, Any]) -> dict[str, Any]:
    return {"roots": [{"uri": "file:///tmp", "name": "tmp"}]}


async def accept_with_defaults(params: dict[str, Any]) -> dict[str, Any]:
    """Elicitation: accept, filling each field with its schema's default (SEP-1034); a
    boolean without one is ``True`` (the suite's input rounds ask "confirmed?")."""
    while while_asked:
        await while_asked.pop()()
    content: dict[str, Any] = {}
    properties = (params.get("requestedSchema") or {}).get("properties") or {}
    for name, field in properties.items():
        if "default" in field:
            content[name] = field["default"]
        elif field.get("type") == "boolean":
            content[name] = True
    return {"action": "accept", "content": content}


@scenario("initialize", "json-schema-ref-no-deref")
async def list_tools(client: Client, context: dict[str, Any]) -> None:
    # json-schema-ref-no-deref: a schema's network $ref is data; the client never fetches it.
    await client.all_tools()


@scenario("tools_call")
async def add_numbers(client: Client, context: dict[str, Any]) -> None:
    await client.all_tools()
    await client.call_tool("add_numbers", {"a": 5, "b": 3})


@scenario("sse-retry")
async def reconnect(client: Client, context: dict[str, Any]) -> None:
    # The server closes the call's stream before answering; the client resumes it with
    # Last-Event-ID after the SSE `retry` interval.
    await client.all_tools()
    await client.call_tool("test_reconnection", {})


@scenario("elicitation-sep1034-client-defaults")
async def elicitation_defaults(client: Client, context: dict[str, Any]) -> None:
    await client.all_tools()
    await client.call_tool("test_client_elicitation_defaults", {})


@scenario("json-schema-2020-12-preservation")
async def echo_schema(client: Client, context: dict[str, Any]) -> None:
    tools = {tool.name: tool for tool in await client.all_tools()}
    schema = tools["json_schema_2020_12_tool"].input_schema
    await client.call_tool("json_schema_echo", {"schema": schema})


@scenario("request-metadata")
async def discover_and_list(client: Client, context: dict[str, Any]) -> None:
    # open_client already sent server/discover (and retried it once with a version the
    # server named when it refused the first); every request carries the _meta.
    await client.request("server/discover", {})
    await client.list_tools()


@scenario("http-standard-headers", "http-invalid-tool-headers")
async def use_everything(client: Client, context: dict[str, Any]) -> None:
    # Every kind of request, each with its Mcp-Method (and Mcp-Name) header. The client
    # leaves out tools whose x-mcp-header marks are invalid (SEP-2243): only the valid ones
    # are listed, so only they get called.
    for tool in await client.all_tools():
        arguments = {name: "test" for name in tool.input_schema.get("properties") or {}}
        await client.call_tool(tool.name, arguments)
    offered = client.description.capabilities if client.description else {}
    if "resources" in offered:
        for resource in await client.all_resources():
            await client.read_resource(resource.uri)
    if "prompts" in offered:
        for prompt in await client.all_prompts():
            await client.get_prompt(prompt.name, {})


@scenario("http-custom-headers")
async def mirrored_calls(client: Client, context: dict[str, Any]) -> None:
    await client.all_tools()
    for call in context.get("toolCalls", []):
        await client.call_tool(call["name"], call["arguments"])


@scenario("sep-2322-client-request-state")
async def input_rounds(client: Client, context: dict[str, Any]) -> None:
    # Another call between the rounds of the first: it must carry nothing of the other's
    # inputResponses or requestState.
    while_asked.append(lambda: client.call_tool("test_mrtr_unrelated", {}))
    for name in ("test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_no_result_type"):
        await client.call_tool(name, {})


async def browse(url: str) -> None:
    """The user's browser, headless: the suite's authorization servers redirect at once (no
    login page), so a GET that follows redirects lands on the client's loopback listener."""

    def visit() -> None:
        with urllib.request.urlopen(url, timeout=10) as response:
            response.read()

    await trio.to_thread.run_sync(visit)


def oauth(**options: Any) -> OAuth:
    """``OAuth`` as a user would set it up, the browser step done by :func:`browse`."""
    login = LoopbackLogin(open_browser=browse, timeout=20, announce=lambda url: None)
    return OAuth(client_name="mcp-runtime-everything-client", login=login, **options)


def authorization_code(context: dict[str, Any]) -> OAuth:
    return oauth(client_metadata_url=CLIENT_METADATA_URL)


def pre_registered(context: dict[str, Any]) -> OAuth:
    return oauth(client_id=context["client_id"], client_secret=context["client_secret"])


def client_credentials(context: dict[str, Any]) -> OAuth:
    if "private_key_pem" in context:
        secret = {
            "private_key": context["private_key_pem"],
            "token_endpoint_auth_method": "private_key_jwt",
        }
    else:
        secret = {
            "client_secret": context["client_secret"],
            "token_endpoint_auth_method": "client_secret_basic",
        }
    return oauth(grant="client_credentials", client_id=context["client_id"], **secret)


def workload_identity(context: dict[str, Any]) -> OAuth:
    # The platform's signed JWT, presented as is (RFC 7523 jwt-bearer grant).
    return oauth(grant="jwt_bearer", client_id=context["client_id"], assertion=context["valid_jwt"])


def enterprise(context: dict[str, Any]) -> OAuth:
    # The enterprise IdP exchanges the user's ID token for an ID-JAG, presented to the MCP
    # server's authorization server (enterprise-managed authorization).
    identity = EnterpriseIdentity(
        token_endpoint=context["idp_token_endpoint"],
        client_id=context["idp_client_id"],
        id_token=context["idp_id_token"],
    )
    return oauth(
        grant="jwt_bearer",
        client_id=context["client_id"],
        client_secret=context["client_secret"],
        enterprise=identity,
    )


AUTHORIZATION_CODE_SCENARIOS = (
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/authorization-server-migration",
    "auth/iss-supported",
    "auth/iss-not-advertised",
    "auth/iss-supported-missing",
    "auth/iss-wrong-issuer",
    "auth/iss-unexpected",
    "auth/iss-normalized",
    "auth/metadata-issuer-mismatch",
    "auth/dpop",  # DPoP-bound tokens where the resource asks for them (RFC 9449)
    "auth/dpop-nonce",
)
AUTH.update(dict.fromkeys(AUTHORIZATION_CODE_SCENARIOS, authorization_code))
AUTH["auth/pre-registration"] = pre_registered
AUTH["auth/client-credentials-basic"] = client_credentials
AUTH["auth/client-credentials-jwt"] = client_credentials
AUTH["auth/wif-jwt-bearer"] = workload_identity
AUTH["auth/enterprise-managed-authorization"] = enterprise


@scenario(*AUTH)
async def authorized(client: Client, context: dict[str, Any]) -> None:
    # Logging in happens on the way: the first request is refused with 401, and the client
    # discovers, registers, authorizes and sends it again.
    tools = await client.all_tools()
    if tools:
        await client.call_tool(tools[0].name, {})


async def main(url: str, name: str) -> None:
    run = SCENARIOS[name]
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    auth = AUTH[name](context) if name in AUTH else None
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION")
    era: Any = "auto" if version is None else "modern" if version in STATELESS else "handshake"
    async with open_client(
        url,
        era=era,
        handshake_version=version if era == "handshake" else None,
        client_info=Implementation("mcp-runtime-everything-client", "1.0.0"),
        elicitation=accept_with_defaults,
        sampling=sample,
        roots=roots,
        timeout=20,
        auth=auth,
    ) as client:
        await run(client, context)


if __name__ == "__main__":
    scenario_name = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    if len(sys.argv) < 2 or scenario_name not in SCENARIOS:
        sys.exit(f"usage: MCP_CONFORMANCE_SCENARIO=NAME {sys.argv[0]} URL ({sorted(SCENARIOS)})")
    try:
        trio.run(main, sys.argv[-1], scenario_name)
    except ClientError as exc:  # a refusal a scenario may expect: one line, exit 1
        sys.exit(f"{scenario_name}: {type(exc).__name__}: {exc}")
