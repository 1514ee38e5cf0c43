"""Everything: one server that exercises every MCP feature the runtime implements.

It is the fixture the official conformance suite (npm ``@modelcontextprotocol/conformance``)
runs against (``python -m tests.conformance``), so its tool, resource and prompt names are the
ones the suite's scenarios call; read it as a tour of the public API:

- tools returning every content type, structured errors, progress and log messages;
- asking the client for input (elicitation, sampling, roots) with the same code in both
  protocol eras: a server-to-client request in the handshake era, an ``input_required``
  round trip in the 2026-07-28 era;
- tasks (the 2026-07-28 extension ``io.modelcontextprotocol/tasks`` and the 2025-11-25
  experimental tasks), including a tool that asks first and only then becomes a task;
- resources, a resource template, subscriptions, prompts, completions, list changes;
- a parameter mirrored into an HTTP header (``Mcp-Param-Region``).

Run it:  mcp-runtime serve examples/everything.py --transport http --port 3001
"""

from __future__ import annotations

import base64
import json
from typing import Annotated, Any

import trio

from runtime import (
    AudioContent,
    Context,
    EmbeddedResource,
    Header,
    ImageContent,
    JSONRPCError,
    PromptMessage,
    Server,
    TextContent,
    TextResourceContents,
)
from runtime.transports import HttpLimits

app = Server(
    "mcp-runtime-everything",
    "1.0.0",
    # Session answers stream as SSE (resumable), and clients reconnect 100 ms after a
    # stream closes (test_reconnection below).
    http_limits=HttpLimits(sse_retry_ms=100, prefer_sse=True),
)

#: A 1x1 PNG and a minimal WAV file, base64.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="  # noqa: E501
WAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="


def form(**properties: dict[str, Any]) -> dict[str, Any]:
    """A flat elicitation form: every property listed is required."""
    return {"type": "object", "properties": properties, "required": list(properties)}


def elicitation(message: str, schema: dict[str, Any]) -> dict[str, Any]:
    """An ``elicitation/create`` input request, for :meth:`Context.ask_all`."""
    return {
        "method": "elicitation/create",
        "params": {"mode": "form", "message": message, "requestedSchema": schema},
    }


def sampling(prompt: str, max_tokens: int) -> dict[str, Any]:
    """A ``sampling/createMessage`` input request, for :meth:`Context.ask_all`."""
    message = {"role": "user", "content": {"type": "text", "text": prompt}}
    return {
        "method": "sampling/createMessage",
        "params": {"messages": [message], "maxTokens": max_tokens},
    }


ROOTS: dict[str, Any] = {"method": "roots/list", "params": {}}


def outcome(prefix: str, answer: dict[str, Any]) -> str:
    """An elicitation's outcome as text: its action and what the user entered."""
    return f"{prefix}: action={answer['action']}, content={json.dumps(answer.get('content', {}))}"


def text_of(answer: dict[str, Any]) -> str:
    """The text of a sampling answer (``CreateMessageResult.content``)."""
    content = answer.get("content")
    if isinstance(content, list):
        content = content[0] if content else {}
    return str(content.get("text", "")) if isinstance(content, dict) else ""


# -- content ---------------------------------------------------------------------------------


@app.tool
def test_simple_text() -> str:
    """Answer with one text block."""
    return "This is a simple text response for testing."


@app.tool
def test_image_content() -> ImageContent:
    """Answer with an image."""
    return ImageContent(data=PNG, mime_type="image/png")


@app.tool
def test_audio_content() -> AudioContent:
    """Answer with audio."""
    return AudioContent(data=WAV, mime_type="audio/wav")


@app.tool
def test_embedded_resource() -> EmbeddedResource:
    """Answer with an embedded resource."""
    return EmbeddedResource(
        resource=TextResourceContents(
            uri="test://embedded-resource",
            mime_type="text/plain",
            text="This is an embedded resource content.",
        )
    )


@app.tool
def test_multiple_content_types() -> list[TextContent | ImageContent | EmbeddedResource]:
    """Answer with text, an image and an embedded resource."""
    return [
        TextContent(text="Multiple content types test:"),
        ImageContent(data=PNG, mime_type="image/png"),
        EmbeddedResource(
            resource=TextResourceContents(
                uri="test://mixed-content-resource",
                mime_type="application/json",
                text=json.dumps({"test": "data", "value": 123}),
            )
        ),
    ]


@app.tool
def test_error_handling() -> str:
    """Always fails: the failure is an ``isError`` result the model can read."""
    raise RuntimeError("This tool intentionally returns an error for testing")


@app.tool(
    input_schema={
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"},
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": False,
    }
)
def json_schema_2020_12_tool(
    name: str = "",
    address: dict[str, str] | None = None,
    contactMethod: str = "email",
    phone: str = "",
    email: str = "",
) -> str:
    """A hand-written JSON Schema 2020-12 input schema, published as written."""
    return f"{name} by {contactMethod}: {phone or email}"


# -- progress and logging --------------------------------------------------------------------


@app.tool
async def test_tool_with_progress(ctx: Context) -> str:
    """Report progress 0, 50, 100 of 100 (when the client asked for progress)."""
    for step in (0, 50, 100):
        await ctx.report_progress(step, 100, f"Completed step {step} of 100")
        if step < 100:
            await trio.sleep(0.05)
    return str(ctx.progress_token)


@app.tool
async def test_tool_with_logging(ctx: Context) -> str:
    """Send three log messages while running."""
    await ctx.info("Tool execution started")
    await trio.sleep(0.05)
    await ctx.info("Tool processing data")
    await trio.sleep(0.05)
    await ctx.info("Tool execution completed")
    return "Tool with logging executed successfully"


@app.tool
async def test_reconnection(ctx: Context) -> str:
    """Close this call's SSE stream part-way; the client resumes it with Last-Event-ID."""
    await ctx.info("Before disconnect")
    await ctx.close_sse_stream()
    await trio.sleep(0.2)  # the client reconnects meanwhile
    await ctx.info("After reconnect")
    return "Reconnection test completed"


@app.tool
async def test_logging_tool(ctx: Context) -> str:
    """Log at every level; the client's level (or its absence) decides what is sent."""
    for level in ("debug", "info", "warning", "error"):
        await ctx.log(level, f"a {level} message", logger="everything")
    return "logged"


# -- asking the client -----------------------------------------------------------------------


@app.tool
async def test_sampling(prompt: str, ctx: Context) -> str:
    """Ask the client's model to complete ``prompt``."""
    answer = await ctx.sample(
        [{"role": "user", "content": {"type": "text", "text": prompt}}], max_tokens=100
    )
    return f"LLM response: {text_of(answer)}"


@app.tool
async def test_elicitation(message: str, ctx: Context) -> str:
    """Ask the user for a username and an email address."""
    answer = await ctx.elicit(
        message,
        form(
            username={"type": "string", "description": "User's response"},
            email={"type": "string", "description": "User's email address"},
        ),
    )
    return (
        f"User response: action={answer['action']}, content={json.dumps(answer.get('content', {}))}"
    )


@app.tool
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Ask with a form whose fields all have defaults (SEP-1034)."""
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {
                "type": "string",
                "description": "User status",
                "enum": ["active", "inactive", "pending"],
                "default": "active",
            },
            "verified": {"type": "boolean", "description": "Verified", "default": True},
        },
    }
    answer = await ctx.elicit("Please provide user information", schema)
    return outcome("Elicitation completed", answer)


@app.tool
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Ask with every enum form SEP-1330 defines."""
    choices = ("option1", "option2", "option3")
    schema = {
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": list(choices)},
            "titledSingle": {
                "type": "string",
                "oneOf": [
                    {"const": "value1", "title": "First Option"},
                    {"const": "value2", "title": "Second Option"},
                    {"const": "value3", "title": "Third Option"},
                ],
            },
            "legacyEnum": {
                "type": "string",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": list(choices)}},
            "titledMulti": {
                "type": "array",
                "items": {
                    "anyOf": [
                        {"const": "value1", "title": "First Choice"},
                        {"const": "value2", "title": "Second Choice"},
                        {"const": "value3", "title": "Third Choice"},
                    ]
                },
            },
        },
    }
    answer = await ctx.elicit("Please select values using different enum schema types", schema)
    return outcome("Elicitation completed", answer)


@app.tool
async def test_missing_capability(ctx: Context) -> str:
    """Needs sampling: a client that did not declare it gets -32021."""
    answer = await ctx.sample(
        [{"role": "user", "content": {"type": "text", "text": "ping"}}], max_tokens=10
    )
    return text_of(answer)


@app.tool
async def test_streaming_elicitation(ctx: Context) -> str:
    """Report progress, then ask (the request's stream carries only what belongs to it)."""
    await ctx.report_progress(1, 2)
    answer = await ctx.elicit("Continue?", form(ok={"type": "boolean"}))
    return f"action={answer['action']}"


# -- multi round-trip requests (2026-07-28) -----------------------------------------------------


NAME_FORM = form(name={"type": "string"})


@app.tool
async def test_input_required_result_elicitation(ctx: Context) -> str:
    """One round: ask for a name."""
    answer = await ctx.elicit("What is your name?", NAME_FORM, key="user_name")
    return f"Hello, {answer.get('content', {}).get('name')}!"


@app.tool
async def test_input_required_result_sampling(ctx: Context) -> str:
    """One round: ask the client's model."""
    answer = await ctx.sample(
        [{"role": "user", "content": {"type": "text", "text": "What is the capital of France?"}}],
        max_tokens=100,
        key="capital_question",
    )
    return f"The model says: {text_of(answer)}"


@app.tool
async def test_input_required_result_list_roots(ctx: Context) -> str:
    """One round: ask for the client's roots."""
    roots = await ctx.list_roots(key="client_roots")
    return "Roots: " + ", ".join(root.get("uri", "?") for root in roots)


@app.tool
async def test_input_required_result_request_state(ctx: Context) -> str:
    """One round; the handler's own note travels in the sealed requestState and back."""
    if "asked_at" not in ctx.request_state:
        ctx.request_state["asked_at"] = "round 1"
    answer = await ctx.elicit("Please confirm", form(ok={"type": "boolean"}), key="confirm")
    ok = ctx.request_state.get("asked_at") == "round 1"  # came back with the retry
    return f"{'state-ok' if ok else 'state-lost'}: confirmed={answer.get('content', {}).get('ok')}"


@app.tool
async def test_input_required_result_multiple_inputs(ctx: Context) -> str:
    """One round asking three things at once."""
    answers = await ctx.ask_all(
        {
            "user_name": elicitation("What is your name?", NAME_FORM),
            "greeting": sampling("Generate a greeting", 50),
            "client_roots": ROOTS,
        }
    )
    name = answers["user_name"].get("content", {}).get("name")
    roots = answers["client_roots"].get("roots", [])
    return f"name={name}, greeting={text_of(answers['greeting'])}, roots={len(roots)}"


@app.tool
async def test_input_required_result_multi_round(ctx: Context) -> str:
    """Two rounds, one after the other."""
    name = await ctx.elicit("Step 1: What is your name?", NAME_FORM, key="step1")
    color = await ctx.elicit(
        "Step 2: What is your favorite color?", form(color={"type": "string"}), key="step2"
    )
    return f"{name.get('content', {}).get('name')} likes {color.get('content', {}).get('color')}"


@app.tool
async def test_input_required_result_tampered_state(ctx: Context) -> str:
    """A round whose requestState is integrity protected (a tampered one is refused)."""
    answer = await ctx.elicit("Please confirm", form(ok={"type": "boolean"}), key="confirm")
    return f"confirmed={answer.get('content', {}).get('ok')}"


@app.tool
async def test_input_required_result_capabilities(ctx: Context) -> str:
    """Ask only for what the client declared it can answer."""
    caps = ctx.client_capabilities
    wanted = {
        "user_name": ("elicitation", elicitation("What is your name?", NAME_FORM)),
        "greeting": ("sampling", sampling("Say hi", 10)),
        "client_roots": ("roots", ROOTS),
    }
    answers = await ctx.ask_all({key: ask for key, (cap, ask) in wanted.items() if cap in caps})
    return f"answered: {', '.join(sorted(answers)) or 'nothing'}"


@app.prompt
async def test_input_required_result_prompt(ctx: Context) -> str:
    """A prompt that asks the user for context first."""
    answer = await ctx.elicit(
        "What context should the prompt use?", form(context={"type": "string"}), key="user_context"
    )
    return f"Use this context: {answer.get('content', {}).get('context')}"


# -- tasks -----------------------------------------------------------------------------------


@app.tool
def greet(name: str) -> str:
    """Greet someone (never a task)."""
    return f"Hello, {name}!"


@app.tool(task="optional")
async def slow_compute(seconds: float = 1.0, label: str = "") -> str:
    """Sleep ``seconds``, then answer (a task for clients that support tasks)."""
    await trio.sleep(seconds)
    return f"computed {label}".strip()


@app.tool(task="required")
async def failing_job() -> str:
    """Runs only as a task, and fails after a second."""
    await trio.sleep(1.0)
    raise RuntimeError("failing_job always fails")


@app.tool(task="optional")
async def protocol_error_job() -> str:
    """A task that ends in a protocol error."""
    raise JSONRPCError(-32603, "protocol_error_job failed on purpose")


@app.tool(task="optional")
async def confirm_delete(filename: str, ctx: Context) -> str:
    """Ask for confirmation, then 'delete' the file."""
    answer = await ctx.elicit(f"Delete {filename}?", form(confirm={"type": "boolean"}))
    if answer.get("action") == "accept" and answer.get("content", {}).get("confirm"):
        return f"deleted {filename}"
    return f"kept {filename}"


@app.tool(task="optional")
async def multi_input(ctx: Context) -> str:
    """Ask two questions at once; the task waits until both are answered."""
    answers = await ctx.ask_all(
        {
            "first": elicitation("First question?", form(answer={"type": "string"})),
            "second": elicitation("Second question?", form(answer={"type": "string"})),
        }
    )
    return f"{answers['first'].get('content')} / {answers['second'].get('content')}"


@app.tool(task="required", defer_task=True)
async def test_tool_with_task(ctx: Context) -> str:
    """Ask for a name first (an input round), then continue as a task."""
    answer = await ctx.elicit("What is your name?", NAME_FORM, key="user_name")
    name = answer.get("content", {}).get("name")
    await ctx.become_task()
    await trio.sleep(0.1)
    return f"Hello from the task, {name}!"


# -- list changes ----------------------------------------------------------------------------


@app.tool
def test_trigger_tool_change() -> str:
    """Add a tool (listeners get notifications/tools/list_changed)."""
    app.add_tool(lambda: "added", name="test_added_tool", description="Added at run time")
    app.remove_tool("test_added_tool")
    return "tool list changed"


@app.tool
def test_trigger_prompt_change() -> str:
    """Add a prompt (listeners get notifications/prompts/list_changed)."""
    app.add_prompt(lambda: "added", name="test_added_prompt", description="Added at run time")
    app.remove_prompt("test_added_prompt")
    return "prompt list changed"


# -- HTTP header mirroring (2026-07-28 Mcp-Param) ----------------------------------------------


@app.tool
def test_custom_headers(region: Annotated[str, Header("Region")], query: str) -> str:
    """A parameter mirrored into the ``Mcp-Param-Region`` header for routing."""
    return f"region={region} query={query}"


# -- resources -------------------------------------------------------------------------------


@app.resource("test://static-text", mime_type="text/plain")
def static_text() -> str:
    """A static text resource."""
    return "This is the content of the static text resource."


@app.resource("test://static-binary", mime_type="image/png")
def static_binary() -> bytes:
    """A static binary resource (a PNG)."""
    return base64.b64decode(PNG)


@app.resource("test://template/{id}/data", mime_type="application/json")
def template_data(id: str) -> str:
    """Data for one id (a resource template)."""
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


@app.resource("test://watched-resource", mime_type="text/plain")
def watched_resource() -> str:
    """A resource clients may subscribe to."""
    return "Watched resource content"


# -- prompts ---------------------------------------------------------------------------------


@app.prompt
def test_simple_prompt() -> str:
    """A prompt without arguments."""
    return "This is a simple prompt for testing."


@app.prompt
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    """A prompt with two required arguments.

    Args:
        arg1: First test argument.
        arg2: Second test argument.
    """
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@app.prompt
def test_prompt_with_embedded_resource(resourceUri: str) -> list[PromptMessage]:
    """A prompt that embeds a resource.

    Args:
        resourceUri: URI of the resource to embed.
    """
    embedded = TextResourceContents(
        uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing."
    )
    return [
        PromptMessage(role="user", content=EmbeddedResource(resource=embedded)),
        PromptMessage(
            role="user", content=TextContent(text="Please process the embedded resource above.")
        ),
    ]


@app.prompt
def test_prompt_with_image() -> list[PromptMessage]:
    """A prompt with an image."""
    return [
        PromptMessage(role="user", content=ImageContent(data=PNG, mime_type="image/png")),
        PromptMessage(role="user", content=TextContent(text="Please analyze the image above.")),
    ]


@app.completion
async def complete(
    ref_type: str, ref: str, argument: str, value: str, context: dict[str, str]
) -> list[str]:
    """Suggest values for prompt and template arguments, by prefix."""
    words = ("paris", "park", "party", "python", "pytest")
    return [word for word in words if word.startswith(value)]


if __name__ == "__main__":
    app.run()
