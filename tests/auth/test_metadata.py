"""RFC 9728 Protected Resource Metadata: the document and where it is served."""

from __future__ import annotations

import json
from typing import Any

import pytest

from runtime.auth import WELL_KNOWN_PREFIX, ProtectedResourceMetadata, well_known_paths

from ._tokens import ISSUER, METADATA_URL, RESOURCE


def test_document_has_the_rfc_9728_members() -> None:
    metadata = ProtectedResourceMetadata(
        resource=RESOURCE,
        authorization_servers=[ISSUER],
        scopes_supported=["mcp:read", "files:read"],
        resource_documentation="https://mcp.example.com/docs",
        resource_name="Example MCP server",
    )
    expected = {
        "resource": RESOURCE,
        "authorization_servers": [ISSUER],
        "scopes_supported": ["mcp:read", "files:read"],
        "bearer_methods_supported": ["header"],
        "resource_documentation": "https://mcp.example.com/docs",
        "resource_name": "Example MCP server",
    }
    assert metadata.document() == expected
    assert json.loads(metadata.document_json()) == expected


def test_minimal_document() -> None:
    metadata = ProtectedResourceMetadata(resource=RESOURCE, authorization_servers=(ISSUER,))
    assert metadata.document() == {
        "resource": RESOURCE,
        "authorization_servers": [ISSUER],
        "bearer_methods_supported": ["header"],
    }


@pytest.mark.parametrize(
    ("resource", "paths"),
    [
        (RESOURCE, [f"{WELL_KNOWN_PREFIX}/mcp", WELL_KNOWN_PREFIX]),
        ("https://example.com/public/mcp", [f"{WELL_KNOWN_PREFIX}/public/mcp", WELL_KNOWN_PREFIX]),
        ("https://mcp.example.com", [WELL_KNOWN_PREFIX]),
        ("https://mcp.example.com/", [WELL_KNOWN_PREFIX]),
        ("https://mcp.example.com:8443/mcp", [f"{WELL_KNOWN_PREFIX}/mcp", WELL_KNOWN_PREFIX]),
        ("http://localhost:8000/mcp", [f"{WELL_KNOWN_PREFIX}/mcp", WELL_KNOWN_PREFIX]),
    ],
)
def test_well_known_paths_in_client_probe_order(resource: str, paths: list[str]) -> None:
    assert well_known_paths(resource) == paths
    metadata = ProtectedResourceMetadata(resource=resource, authorization_servers=[ISSUER])
    assert metadata.well_known_paths() == paths


def test_both_forms_for_a_resource_at_slash_mcp() -> None:
    assert well_known_paths("https://host/mcp") == [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ]


def test_metadata_url_is_the_path_inserted_form() -> None:
    metadata = ProtectedResourceMetadata(resource=RESOURCE, authorization_servers=[ISSUER])
    assert metadata.metadata_url == METADATA_URL
    root = ProtectedResourceMetadata(
        resource="https://mcp.example.com:8443", authorization_servers=[ISSUER]
    )
    assert root.metadata_url == "https://mcp.example.com:8443/.well-known/oauth-protected-resource"


@pytest.mark.parametrize(
    "options",
    [
        {"resource": "http://mcp.example.com/mcp"},
        {"resource": "mcp.example.com"},
        {"resource": "https://mcp.example.com/mcp#frag"},
        {"resource": "https://mcp.example.com/mcp?x=1"},
        {"resource": "https://user:pw@mcp.example.com/mcp"},
        {"resource": 'https://mcp.example.com/"mcp'},
        {"authorization_servers": []},
        {"authorization_servers": "https://auth.example.com"},
        {"authorization_servers": ["http://auth.example.com"]},
        {"scopes_supported": ["offline_access"]},
        {"scopes_supported": ["has space"]},
        {"resource_documentation": "ftp://docs"},
    ],
    ids=repr,
)
def test_invalid_metadata_is_refused(options: dict[str, Any]) -> None:
    fields: dict[str, Any] = {"resource": RESOURCE, "authorization_servers": [ISSUER], **options}
    with pytest.raises(ValueError):
        ProtectedResourceMetadata(**fields)
