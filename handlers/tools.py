"""``tools/list`` and ``tools/call`` (MCP 2025-11-25 server/tools).

Protocol errors (unknown tool, malformed params) are JSON-RPC errors; everything that goes
wrong inside the tool, including argument validation, is an ``isError: true`` result the
model can read and correct (spec: "Tool Execution Errors").
"""

from __future__ import annotations

import functools
import logging
import math
from typing import Any, Final

import msgspec
import msgspec.structs
from msgspec import UNSET, Raw, UnsetType

from runtime.core import Handler, RequestContext
from runtime.features import (
    App,
    AudioContent,
    BecomeTask,
    EmbeddedResource,
    ImageContent,
    InputRequired,
    InputRound,
    ResourceLink,
    TaskRecord,
    TextContent,
    ToolDef,
    enc_hook,
)
from runtime.protocol import TOOLS_CALL, TOOLS_LIST, JSONRPCError, ToolError

from . import tasks
from ._common import (
    InputFields,
    call_user_function,
    call_with_input,
    decode_params,
    input_required,
    paginated,
    request_meta,
)
from ._typed_call import TypedCall, TypedCalls

__all__ = ["methods", "to_content"]

log = logging.getLogger("mcp_runtime.tools")

_CONTENT_TYPES: Final = (TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource)
_EMPTY_ARGS: Final = b"{}"


class _CallParams(InputFields, kw_only=True):
    name: str
    #: 2025-11-25 task augmentation: ``{"ttl": ms}`` asks to run the call as a task.
    task: dict[str, Any] | None = None
    arguments: Raw | UnsetType = UNSET
    #: Kept raw: decoded by ``request_meta`` (a modern request's is decoded already).
    meta: Raw | UnsetType = msgspec.field(default=UNSET, name="_meta")


class _ListParams(msgspec.Struct):
    cursor: str | None = None


_call_decoder: Final = msgspec.json.Decoder(_CallParams)
_list_decoder: Final = msgspec.json.Decoder(_ListParams)
# enc_hook: a pydantic model returned without a data annotation still encodes (as its JSON).
_encode: Final = msgspec.json.Encoder(enc_hook=enc_hook).encode


def to_content(value: Any) -> list[Any]:
    """A tool's return value as a list of content blocks."""
    if value is None:
        return []
    if isinstance(value, str):
        return [TextContent(text=value)]
    if isinstance(value, _CONTENT_TYPES):
        return [value]
    if isinstance(value, list | tuple) and all(
        isinstance(item, (str, *_CONTENT_TYPES)) for item in value
    ):
        return [TextContent(text=item) if isinstance(item, str) else item for item in value]
    return [TextContent(text=_encode(value).decode())]


def _retry_call(name: str, params: Raw | bytes | None) -> list[Any]:
    """What an input-required round binds its requestState to: the tool and its arguments
    (read from the request's raw ``params`` only when a round needs them)."""
    arguments = _read_params(params).arguments
    return [name, msgspec.json.decode(_EMPTY_ARGS if arguments is UNSET else arguments)]


def _read_params(params: Raw | bytes | None) -> _CallParams:
    return _call_decoder.decode(_EMPTY_ARGS if params is None else params)


def _no_arguments(tool: ToolDef) -> Any:
    """The arguments of a call that sent none: the tool's defaults, or (a dict) the
    ``isError`` result when it requires some."""
    try:
        return tool.signature.json_decoder.decode(_EMPTY_ARGS)
    except msgspec.ValidationError as exc:
        return _error_result(f"Invalid arguments for tool {tool.name!r}: {exc}")


def _error_result(text: str) -> dict[str, Any]:
    return {"content": [TextContent(text=text)], "isError": True}


def _failed(ctx: RequestContext, tool: ToolDef, exc: Exception) -> dict[str, Any]:
    """The ``isError`` result of a tool that raised ``exc`` (logged, never on the wire as a
    traceback)."""
    log.warning(
        "tool failed conn=%s id=%r tool=%s error=%r",
        ctx.peer.connection_id,
        ctx.id,
        tool.name,
        exc,
        exc_info=log.isEnabledFor(logging.DEBUG),
    )
    return _error_result(f"Error executing tool {tool.name}: {exc}")


def _non_finite(value: Any, path: str) -> str | None:
    """The path of the first infinite or NaN float in ``value`` (builtins), else None."""
    if isinstance(value, float):
        return None if math.isfinite(value) else path
    if isinstance(value, dict):
        for key, item in value.items():
            found = _non_finite(item, f"{path}.{key}" if path else str(key))
            if found is not None:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = _non_finite(item, f"{path}[{index}]")
            if found is not None:
                return found
    return None


def shape(tool: ToolDef, value: Any) -> dict[str, Any]:
    """A tool's return value as its ``CallToolResult``: content blocks, plus
    ``structuredContent`` when the tool declares an output schema."""
    if tool.output is not None:
        structured = tool.output.structured(value)
        # The text mirror is the JSON of the value itself (a wrapped ``int`` reads "42",
        # as the official SDK writes it), the structured form carries the wrapper.
        mirror = structured["result"] if tool.output.wrap else structured
    elif tool.output_schema is not None:
        structured = mirror = msgspec.to_builtins(value, enc_hook=enc_hook)
    else:
        return {"content": to_content(value), "isError": False}
    bad = _non_finite(structured, "")
    if bad is not None:
        # JSON has no infinity or NaN; msgspec would write null, which the tool's own output
        # schema forbids. Tell the tool's author instead.
        log.warning("tool returned a non-finite number tool=%s path=%s", tool.name, bad)
        return _error_result(
            f"Tool {tool.name} returned a non-finite number at `{bad}`, which JSON cannot carry"
        )
    # 2025-06-18 server/tools: structuredContent plus the serialized JSON as text, for
    # clients that do not read structured output.
    text = mirror if isinstance(mirror, str) else _encode(mirror).decode()
    return {"content": [TextContent(text=text)], "structuredContent": structured, "isError": False}


def methods(server: App, typed_calls: TypedCalls | None = None) -> dict[str, Handler]:
    """``typed_calls``: the server's one-pass reader of call params, shared with era
    selection (``era.McpDispatcher``); the registry's own when not given."""
    registry = server.registry
    if typed_calls is None:
        typed_calls = TypedCalls.of(registry)

    async def list_tools(ctx: RequestContext) -> dict[str, Any]:
        params = decode_params(ctx, _list_decoder, b"{}")
        return paginated(server, "tools", registry.tools.values(), params.cursor)

    async def call_tool(ctx: RequestContext) -> dict[str, Any]:
        params: _CallParams | TypedCall
        call = typed_calls.for_request(ctx)
        if call is not None:
            # Params, _meta and arguments read in one pass, by whoever read them first (the
            # stream reader, the HTTP transport or era selection: ``TypedCalls``).
            tool, params, args, meta = call.tool, call, call.arguments, call.meta
        else:  # the general reading: params, then the arguments by the tool's decoder
            params = decode_params(ctx, _call_decoder, b"{}")
            found = registry.tools.get(params.name)
            if found is None:
                raise JSONRPCError.invalid_params(
                    f"Unknown tool: {params.name}", {"name": params.name}
                )
            tool = found
            meta = request_meta(ctx, params.meta)
            raw = _EMPTY_ARGS if params.arguments is UNSET else params.arguments
            try:
                args = tool.signature.json_decoder.decode(raw)
            except msgspec.ValidationError as exc:
                return _error_result(f"Invalid arguments for tool {tool.name!r}: {exc}")
        if args is UNSET:  # (a typed reading of a call that sent no arguments)
            args = _no_arguments(tool)
            if type(args) is dict:
                return args  # the isError result
        sig = tool.signature
        as_task = tasks.wants_task(ctx, tool.task_support, params.task)
        if as_task is not None:
            if ctx.modern and tool.defer_task:
                # Input rounds in the request first; ctx.become_task() hands over.
                try:
                    _, result = await execute(ctx, tool, args, params, meta, None, True)
                except BecomeTask as handoff:
                    gathered = InputRound(handoff.responses)
                    return await start_task(ctx, tool, args, params, meta, as_task, gathered)
                return result
            return await start_task(ctx, tool, args, params, meta, as_task)
        if sig.direct and params.request_state is None and not params.input_responses:
            # The common shape, an async tool that takes no Context: awaited right here,
            # without execute's layers (no Context, no input round, no thread). The same
            # outcomes as execute gives it.
            try:
                value = await tool.fn(**msgspec.structs.asdict(args))
            except InputRequired as exc:  # raised by the tool itself
                if not ctx.modern:
                    return _failed(ctx, tool, exc)
                retry = functools.partial(_retry_call, tool.name, ctx.params)
                return input_required(server, ctx, exc, {}, None, retry)
            except JSONRPCError:
                raise
            except ToolError as exc:
                return _error_result(str(exc))
            except Exception as exc:
                return _failed(ctx, tool, exc)
            return shape(tool, value)
        _, result = await execute(ctx, tool, args, params, meta, None)
        return result

    async def start_task(
        ctx: RequestContext,
        tool: ToolDef,
        args: msgspec.Struct,
        params: _CallParams | TypedCall,
        meta: dict[str, Any] | None,
        as_task: dict[str, Any],
        gathered: InputRound | None = None,
    ) -> dict[str, Any]:
        """Run the call as a task (server/tasks): answered at once with the task created.
        (Apart from call_tool, whose locals would otherwise all become closure cells.)
        ``gathered``: the answers of input rounds run before the call became a task."""
        record = server.tasks.create(tasks.owner(ctx), as_task.get("ttl") if as_task else None)

        async def run_task() -> dict[str, Any]:
            _, result = await execute(ctx, tool, args, params, meta, record, round=gathered)
            return result

        if not ctx.modern:
            tasks.report_status(ctx.peer, record)
        server.tasks.start(record, run_task)
        await server.tasks.persist(record)  # visible to every replica before announced
        return tasks.created(ctx, record)

    async def execute(
        ctx: RequestContext,
        tool: ToolDef,
        args: msgspec.Struct,
        params: _CallParams | TypedCall,
        meta: dict[str, Any] | None,
        task: TaskRecord | None,
        defer_task: bool = False,
        round: InputRound | None = None,
    ) -> tuple[bool, dict[str, Any]]:
        """Run the tool; ``(True, input_required_result)`` or ``(False, call_tool_result)``.
        With ``defer_task``, BecomeTask from the tool propagates to the caller."""
        sig = tool.signature
        try:
            if task is not None:
                value = await call_user_function(
                    server, ctx, tool.fn, sig, args, meta, round, task=task
                )
            elif not ctx.modern:
                value = await call_user_function(server, ctx, tool.fn, sig, args, meta)
            else:
                asking, value = await call_with_input(
                    server,
                    ctx,
                    tool.fn,
                    sig,
                    args,
                    meta,
                    params,
                    functools.partial(_retry_call, tool.name, ctx.params),
                    defer_task,
                )
                if asking:
                    return True, value
        except (JSONRPCError, BecomeTask):
            raise
        except ToolError as exc:
            return False, _error_result(str(exc))
        except Exception as exc:
            return False, _failed(ctx, tool, exc)
        return False, shape(tool, value)

    return {TOOLS_LIST: list_tools, TOOLS_CALL: call_tool}
