"""A notes server people log in to: the runtime is its OAuth authorization server.

``require_login`` says the server needs login and which scopes it knows; how people log in
is the deployment's choice. On a fresh machine this one command works, in the development
mode (static users, no password, said loudly in the log and on the login page)::

    mcp-runtime serve examples/oauth_server.py --transport http

In front of a real OpenID provider (people log in there; the runtime never sees a password,
and MCP clients get the runtime's own tokens, never the provider's)::

    export OIDC_CLIENT_SECRET=...
    mcp-runtime serve examples/oauth_server.py --transport http \\
        --auth oidc --issuer https://accounts.example.com \\
        --client-id mcp-notes --client-secret-env OIDC_CLIENT_SECRET \\
        --public-url https://notes.example.com

Either way the server's Protected Resource Metadata
(``/.well-known/oauth-protected-resource/mcp``) names its authorization server, which MCP
clients discover, register with, and log in through (docs/auth.md).
"""

from __future__ import annotations

import msgspec

from runtime import Context, Server, ToolError
from runtime.auth import AccessToken
from runtime.authserver import require_login

app = Server("oauth-server", "1.0.0", instructions="Team notes; writing needs notes:write.")
require_login(
    app,
    scopes=["notes:read", "notes:write"],
    required_scopes=["notes:read"],
    tool_scopes={"write_note": ["notes:write"]},
)

NOTES: dict[str, tuple[str, str]] = {}  # name -> (text, author)


class Whoami(msgspec.Struct):
    subject: str
    client_id: str | None
    scopes: list[str]


def caller(ctx: Context) -> AccessToken:
    principal = ctx.principal
    if not isinstance(principal, AccessToken):  # served without login (stdio, tests)
        raise ToolError("this server needs a logged-in caller")
    return principal


@app.tool(annotations={"readOnlyHint": True})
async def whoami(ctx: Context) -> Whoami:
    """Who logged in, through which client, with which scopes."""
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
