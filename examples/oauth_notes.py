"""A team notes server behind OAuth 2.1: every HTTP request carries a bearer token.

MCP basic/authorization: the server is an OAuth resource server. It publishes RFC 9728
metadata naming its authorization server, answers 401 with a ``WWW-Authenticate`` challenge
without a valid token, and 403 ``insufficient_scope`` when a tool needs a scope the token lacks.
Tokens are JWTs checked locally: ``JWTVerifier(jwks_uri=...)`` fetches the authorization
server's signing keys itself, caches them by ``Cache-Control: max-age`` and refetches when a
token names a new key (rotation). Tools see the caller as ``ctx.principal``.

Run it (needs the ``auth`` extra: ``pip install 'trio-mcp-runtime[auth]'``)::

    OAUTH_ISSUER=https://auth.example.com \\
    OAUTH_JWKS_URI=https://auth.example.com/.well-known/jwks.json \\
    MCP_RESOURCE=https://notes.example.com/mcp \\
    python examples/oauth_notes.py
"""

from __future__ import annotations

import os

import msgspec

from runtime import Context, Server, ToolError
from runtime.auth import AccessToken, AuthConfig, JWTVerifier, ProtectedResourceMetadata

app = Server("oauth-notes", "1.0.0", instructions="Team notes; writing needs notes:write.")

NOTES: dict[str, tuple[str, str]] = {}  # name -> (text, author)


class Whoami(msgspec.Struct):
    subject: str
    client_id: str | None
    scopes: list[str]


def caller(ctx: Context) -> AccessToken:
    principal = ctx.principal
    if not isinstance(principal, AccessToken):  # served without auth (stdio, tests)
        raise ToolError("this server needs an authenticated caller")
    return principal


@app.tool(annotations={"readOnlyHint": True})
async def whoami(ctx: Context) -> Whoami:
    """Who the access token says is calling."""
    token = caller(ctx)
    return Whoami(token.subject, token.client_id, sorted(token.scopes))


@app.tool(annotations={"readOnlyHint": True})
async def read_note(name: str) -> str:
    """Read a note.

    Args:
        name: The note's name.
    """
    if name not in NOTES:
        raise ToolError(f"no note named {name!r}")
    text, author = NOTES[name]
    return f"{text}\n-- {author}"


@app.tool
async def write_note(name: str, text: str, ctx: Context) -> str:
    """Create or replace a note, signed by the caller (needs the notes:write scope).

    Args:
        name: The note's name.
        text: Its text.
    """
    NOTES[name] = (text, caller(ctx).subject)
    return f"saved {name}"


def auth_config(
    *, issuer: str, jwks_uri: str, resource: str, key_refresh_interval: float = 60.0
) -> AuthConfig:
    """Who may call: tokens from ``issuer`` for ``resource``, keys fetched from ``jwks_uri``
    (refetched for an unknown key id at most every ``key_refresh_interval`` seconds)."""
    verifier = JWTVerifier(
        jwks_uri=jwks_uri,
        issuer=issuer,
        audience=resource,
        jwks_refresh_interval=key_refresh_interval,
    )
    return AuthConfig(
        verifier=verifier,
        resource_metadata=ProtectedResourceMetadata(
            resource=resource,
            authorization_servers=[issuer],
            scopes_supported=["notes:read", "notes:write"],
        ),
        required_scopes=frozenset({"notes:read"}),
        tool_scopes={"write_note": frozenset({"notes:write"})},
    )


if __name__ == "__main__":
    config = auth_config(
        issuer=os.environ["OAUTH_ISSUER"],
        jwks_uri=os.environ["OAUTH_JWKS_URI"],
        resource=os.environ.get("MCP_RESOURCE", "http://127.0.0.1:8000/mcp"),
    )
    app.run("http", port=int(os.environ.get("PORT", "8000")), auth=config)
