"""``mcp-runtime login URL`` / ``logout URL``, and the OAuth flags of the client verbs.

``login`` runs the OAuth flow now (``runtime.client.OAuth``: discovery, registration, the
browser step through a loopback redirect, or client credentials with
``--client-credentials``) and keeps the tokens in the user's token directory
(``runtime.client.FileTokenStore``: one 0600 file per server). ``list``, ``call``, ``read`` and
``inspect`` use those tokens for an ``http(s)://`` target (refreshing them when they expire)
and never open a browser themselves: a needed login is an error saying to run ``login``.
``logout`` forgets the stored login.

Secrets never come from a flag's value (a process listing would show it): the client secret
is read from an environment variable (``--client-secret-env``, default
``MCP_RUNTIME_CLIENT_SECRET``). Exit status: 0 done; 2 a usage error; 3 the server or the
authorization server could not be reached; 4 authorization failed (:data:`EXIT_AUTH`).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Final

import trio

from ..client import (
    AuthorizationFailed,
    ClientError,
    FileTokenStore,
    LoopbackLogin,
    OAuth,
)

__all__ = ["EXIT_AUTH", "SECRET_ENV", "add_oauth_flags", "login_main", "oauth_for"]

#: The exit status of an authorization failure (a login needed, refused or timed out).
EXIT_AUTH: Final = 4
#: Where the client secret is read from by default.
SECRET_ENV: Final = "MCP_RUNTIME_CLIENT_SECRET"
_USAGE: Final = 2
_FAILED: Final = 3


def add_oauth_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--client-id", metavar="ID", help="a pre-registered OAuth client id (default: register)"
    )
    parser.add_argument(
        "--client-secret-env",
        metavar="VAR",
        default=SECRET_ENV,
        help=f"the environment variable holding the client secret (default: {SECRET_ENV})",
    )
    parser.add_argument("--scope", metavar="SCOPES", help="the OAuth scope to ask for")
    parser.add_argument(
        "--token-dir",
        metavar="DIR",
        help="where logins are kept (default: ~/.config/mcp-runtime/oauth, mode 0700)",
    )


def oauth_for(args: argparse.Namespace, *, interactive: bool = False) -> OAuth:
    """The :class:`OAuth` the flags describe (tokens in the file store)."""
    secret = os.environ.get(args.client_secret_env) or None
    credentials = getattr(args, "client_credentials", False)
    login = None
    if interactive and not credentials:
        login = LoopbackLogin(
            open_browser=not args.no_browser, timeout=args.login_timeout, port=args.port
        )
    return OAuth(
        client_id=args.client_id,
        client_secret=secret,
        scope=args.scope,
        grant="client_credentials" if credentials else "authorization_code",
        login=login,
        store=FileTokenStore(args.token_dir),
    )


def _parser(command: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"mcp-runtime {command}",
        description=(
            "Log in to an OAuth-protected MCP server and keep its tokens."
            if command == "login"
            else "Forget the stored login of an MCP server."
        ),
    )
    parser.add_argument("url", metavar="URL", help="the server's http(s):// MCP endpoint")
    add_oauth_flags(parser)
    if command == "login":
        parser.add_argument(
            "--no-browser", action="store_true", help="print the login URL only, open nothing"
        )
        parser.add_argument(
            "--client-credentials",
            action="store_true",
            help="log in as a service with --client-id and its secret (no browser)",
        )
        parser.add_argument(
            "--port", type=int, default=0, help="the loopback redirect port (default: any free)"
        )
        parser.add_argument(
            "--login-timeout",
            type=float,
            default=300.0,
            metavar="SECONDS",
            help="how long the browser login may take (300)",
        )
    return parser


def login_main(argv: Sequence[str]) -> int:
    """``login URL ...`` or ``logout URL ...`` (``argv`` starts with the command)."""
    command, rest = argv[0], list(argv[1:])
    parser = _parser(command)
    try:
        args = parser.parse_args(rest)
    except SystemExit as exc:
        return _USAGE if exc.code else 0
    if not args.url.startswith(("http://", "https://")):
        print("mcp-runtime: error: login is for http(s):// servers", file=sys.stderr)
        return _USAGE
    try:
        oauth = oauth_for(args, interactive=command == "login")
    except ValueError as exc:
        print(f"mcp-runtime: error: {exc}", file=sys.stderr)
        return _USAGE
    try:
        if command == "logout":
            found = trio.run(oauth.forget, args.url)
            print(f"{'logged out of' if found else 'no login stored for'} {args.url}")
            return 0
        trio.run(oauth.login_to, args.url)
    except AuthorizationFailed as exc:
        print(f"mcp-runtime: error: {exc}", file=sys.stderr)
        return EXIT_AUTH
    except (ClientError, OSError) as exc:
        print(f"mcp-runtime: error: {exc}", file=sys.stderr)
        return _FAILED
    except KeyboardInterrupt:  # pragma: no cover
        return 130
    print(f"logged in to {args.url}")
    return 0
