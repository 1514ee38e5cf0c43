"""Feature support: what the MCP handlers (``handlers/``) and the user's face (``Server``,
``Context``) share, below both.

- ``_registry``: the registered tools, resources, templates and prompts, built once at
  registration (decoders, schemas, list entries), and the ``App`` protocol handlers are
  written against.
- ``_signature``, ``_output``, ``_contents``, ``_types``: from Python functions and values
  to MCP schemas and content.
- ``_broadcast``: list-changed and resource-updated fan-out to sessions and listens.
- ``_tasks``: the task table (both task protocols). ``_input``, ``_state``: multi round-trip
  input requests and their sealed ``requestState``. ``_pagination``: cursors.
  ``_uritemplate``: RFC 6570 resource templates.

No I/O of its own beyond trio primitives; it imports ``runtime.protocol`` and nothing above.
Other packages import the names re-exported here, never the private modules.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._annotations import enc_hook
from ._broadcast import LIST_KINDS, REPLICA_COPY, TASK_KEY, Broadcast, Change, ListKind, Subscriber
from ._contents import reply_contents, to_contents
from ._input import (
    INPUT_METHODS,
    BecomeTask,
    InputRequired,
    InputRound,
    check_capability,
    check_response,
    required_capability,
)
from ._output import OutputSpec, output_spec
from ._pagination import CursorCodec
from ._registry import App, Completer, PromptDef, Registry, ResourceDef, TemplateDef, ToolDef
from ._signature import Signature, doc_summary, inspect_signature
from ._state import StateSealer, params_digest, principal_key
from ._tasks import TERMINAL, TaskHandle, TaskMirror, TaskRecord, TaskTable, legacy_wire
from ._threads import ThreadBounds, WorkerThreads
from ._types import (
    Annotations,
    AudioContent,
    BlobResourceContents,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    PromptMessage,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

if TYPE_CHECKING:
    from ._uritemplate import UriTemplate, UriTemplateError, is_template

__all__ = [
    "INPUT_METHODS",
    "LIST_KINDS",
    "REPLICA_COPY",
    "TASK_KEY",
    "TERMINAL",
    "Annotations",
    "App",
    "AudioContent",
    "BecomeTask",
    "BlobResourceContents",
    "Broadcast",
    "Change",
    "Completer",
    "ContentBlock",
    "CursorCodec",
    "EmbeddedResource",
    "ImageContent",
    "InputRequired",
    "InputRound",
    "ListKind",
    "OutputSpec",
    "PromptDef",
    "PromptMessage",
    "Registry",
    "ResourceDef",
    "ResourceLink",
    "Signature",
    "StateSealer",
    "Subscriber",
    "TaskHandle",
    "TaskMirror",
    "TaskRecord",
    "TaskTable",
    "TemplateDef",
    "TextContent",
    "TextResourceContents",
    "ThreadBounds",
    "ToolDef",
    "UriTemplate",
    "UriTemplateError",
    "WorkerThreads",
    "check_capability",
    "check_response",
    "doc_summary",
    "enc_hook",
    "inspect_signature",
    "is_template",
    "legacy_wire",
    "output_spec",
    "params_digest",
    "principal_key",
    "reply_contents",
    "required_capability",
    "to_contents",
]


#: Loaded on first use (PEP 562): a server without resource templates never needs the RFC 6570
#: module (its regular expressions and dataclasses cost every ``mcp-runtime serve`` start-up
#: time; tests/test_startup.py keeps it lazy).
_LAZY = dict.fromkeys(("UriTemplate", "UriTemplateError", "is_template"), "._uritemplate")


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
