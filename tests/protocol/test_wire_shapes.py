"""One definition of the MCP content blocks and results, for both sides: what a server writes
with ``runtime.TextContent`` is what the client reads into the same class, byte for byte
what the server always wrote."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import msgspec
import pytest

import runtime
import runtime.client
import runtime.protocol as protocol
from runtime.client import BadMessage, CallToolResult, ReadResourceResult
from runtime.client._decode import decode_as
from runtime.protocol import (
    Annotations,
    AudioContent,
    BlobResourceContents,
    EmbeddedResource,
    ImageContent,
    ResourceContents,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

SHARED = [
    "AudioContent",
    "EmbeddedResource",
    "ImageContent",
    "PromptMessage",
    "ResourceLink",
    "TextContent",
]


@pytest.mark.parametrize("name", SHARED)
def test_the_server_and_the_client_name_one_class(name: str) -> None:
    assert getattr(runtime, name) is getattr(runtime.client, name) is getattr(protocol, name)


def test_the_client_names_for_union_and_contents_are_the_protocols() -> None:
    assert runtime.client.Content == protocol.ContentBlock
    assert runtime.client.ResourceContents is protocol.ResourceContents
    assert issubclass(runtime.TextResourceContents, runtime.client.ResourceContents)
    for name in ("CallToolResult", "Tool", "Task", "Implementation", "ListToolsResult"):
        assert getattr(runtime.client, name) is getattr(protocol, name)


BLOCKS: list[tuple[Any, bytes]] = [
    (TextContent(text="hi"), b'{"type":"text","text":"hi"}'),
    (
        TextContent(text="hi", annotations=Annotations(audience=["user"], priority=0.5)),
        b'{"type":"text","text":"hi","annotations":{"audience":["user"],"priority":0.5}}',
    ),
    (
        ImageContent(data="aGk=", mime_type="image/png", meta={"k": 1}),
        b'{"type":"image","data":"aGk=","mimeType":"image/png","_meta":{"k":1}}',
    ),
    (
        AudioContent(data="aGk=", mime_type="audio/wav"),
        b'{"type":"audio","data":"aGk=","mimeType":"audio/wav"}',
    ),
    (
        ResourceLink(uri="file:///a", name="a", size=3),
        b'{"type":"resource_link","uri":"file:///a","name":"a","size":3}',
    ),
    (
        EmbeddedResource(resource=TextResourceContents(uri="u://1", text="t", mime_type="m")),
        b'{"type":"resource","resource":{"uri":"u://1","text":"t","mimeType":"m"}}',
    ),
    (
        EmbeddedResource(resource=BlobResourceContents(uri="u://2", blob="aGk=")),
        b'{"type":"resource","resource":{"uri":"u://2","blob":"aGk="}}',
    ),
]


@pytest.mark.parametrize(("block", "wire"), BLOCKS)
def test_what_the_server_writes_the_client_reads_back(block: Any, wire: bytes) -> None:
    assert msgspec.json.encode(block) == wire  # absent members stay off the wire
    result = decode_as(
        msgspec.Raw(b'{"content":[' + wire + b'],"isError":false}'), CallToolResult, "tools/call"
    )
    (read,) = result.content
    assert type(read) is type(block)
    assert msgspec.json.encode(read) == wire


def test_resource_contents_are_read_as_one_shape_and_written_as_two() -> None:
    raw = msgspec.Raw(
        b'{"contents":[{"uri":"a://1","text":"x","mimeType":"text/plain"},'
        b'{"uri":"a://2","blob":"aGk="}],"ttlMs":5}'
    )
    result = decode_as(raw, ReadResourceResult, "resources/read")
    text, blob = result.contents
    assert type(text) is ResourceContents and text.text == "x" and text.blob is None
    assert blob.blob == "aGk=" and blob.mime_type is None and result.ttl_ms == 5
    with pytest.raises(TypeError, match="needs text"):
        TextResourceContents(uri="a://1")
    with pytest.raises(TypeError, match="needs blob"):
        BlobResourceContents(uri="a://1", text="x")


def test_what_a_newer_peer_adds_is_ignored_and_what_it_leaves_out_is_none() -> None:
    raw = msgspec.Raw(b'{"content":[{"type":"text","text":"x","future":1}],"newField":[1]}')
    result = decode_as(raw, CallToolResult, "tools/call")
    (block,) = result.content
    assert isinstance(block, TextContent) and block.annotations is None and block.meta is None
    assert result.structured_content is None and not result.is_error


def test_a_block_of_another_type_than_the_schemas_is_refused_whole() -> None:
    raw = msgspec.Raw(b'{"content":[{"type":"text","text":"x","annotations":{"priority":"high"}}]}')
    with pytest.raises(BadMessage, match=r"annotations\.priority"):
        decode_as(raw, CallToolResult, "tools/call")


def test_every_method_name_is_one_constant_in_one_set() -> None:
    source = Path(protocol.__file__).with_name("_methods.py")
    constants = {
        node.value.value
        for node in ast.walk(ast.parse(source.read_text()))
        if isinstance(node, ast.AnnAssign)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }
    assert constants == protocol.MCP_METHODS
    assert protocol.MCP_METHODS == protocol.CLIENT_METHODS | protocol.SERVER_METHODS
    assert protocol.PING in protocol.CLIENT_METHODS & protocol.SERVER_METHODS
