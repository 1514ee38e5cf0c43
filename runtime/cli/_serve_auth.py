"""``serve --auth``: the runtime's authorization server in front of the MCP endpoint.

``--auth oidc --issuer URL --client-id ID --client-secret-env VAR``: people log in at that
OpenID provider; ``--auth github --client-id ID --client-secret-env VAR``: at GitHub (an
OAuth app). ``--auth dev``: development users, no password (said loudly). A server that
called ``runtime.authserver.require_login`` gets the same without ``--auth``: ``oidc`` when
``--issuer`` is given, else the development mode, so that its one command works on a fresh
machine.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from ._flags import UsageError

__all__ = ["login_options"]

log = logging.getLogger("mcp_runtime.cli")


def login_options(server: Any, settings: dict[str, Any]) -> dict[str, Any]:
    """``serve_http``'s ``auth=`` for these settings, or {} when nobody logs in."""
    from ..authserver import LoginRequirement, login_requirement

    wanted = login_requirement(server)
    mode = settings["auth"]
    if mode is None and wanted is None:
        return {}
    # Only now (PyJWT, cryptography): a server nobody logs in to never loads them.
    from ..authserver import (
        AuthorizationServer,
        DevStaticUsers,
        GitHubUpstream,
        OIDCUpstream,
        Upstream,
    )

    wanted = wanted or LoginRequirement()
    if mode is None:
        mode = "oidc" if settings["issuer"] else "dev"
    public = settings["public_url"]
    if public is None:
        if int(settings["port"]) == 0:
            raise UsageError(
                "--auth needs a fixed --port or --public-url: the server's URL is the issuer "
                "of its tokens and the resource they are for"
            )
        host = settings["host"]
        host = f"[{host}]" if ":" in host else host
        public = f"http://{host}:{settings['port']}"
    public = public.rstrip("/")
    upstream: Upstream
    secret = None
    variable = settings["client_secret_env"]
    if variable:
        secret = os.environ.get(variable)
        if not secret:
            raise UsageError(f"--client-secret-env {variable}: that variable is not set")
    if mode == "oidc":
        if not (settings["issuer"] and settings["client_id"]):
            raise UsageError("--auth oidc needs --issuer URL and --client-id ID")
        upstream = OIDCUpstream(
            settings["issuer"], client_id=settings["client_id"], client_secret=secret
        )
    elif mode == "github":
        if not (settings["client_id"] and secret):
            raise UsageError("--auth github needs --client-id ID and --client-secret-env VAR")
        upstream = GitHubUpstream(client_id=settings["client_id"], client_secret=secret)
    else:
        upstream = DevStaticUsers(wanted.dev_users)
    path = settings["path"] or "/mcp"
    login = AuthorizationServer(
        issuer=public,
        resource=public + path,
        upstream=upstream,
        scopes=wanted.scopes,
        store=_grant_store(server),
    )
    log.info("auth.authorization_server issuer=%s upstream=%s", public, upstream.name)
    return {
        "auth": login.auth_config(
            required_scopes=wanted.required_scopes, tool_scopes=wanted.tool_scopes
        )
    }


def _grant_store(server: Any) -> Any:
    """The grant store beside the server's store: Redis's when the server's is (replicas
    behind a balancer share clients, logins, codes, refresh tokens and keys: any step of a
    login on any replica), else None: this process's memory."""
    store = getattr(server, "store", None)
    if store is None or not getattr(store, "shared", False):
        return None
    from ..stores import RedisGrantStore, RedisStore

    if isinstance(store, RedisStore):
        return RedisGrantStore.of(store)
    raise UsageError(f"--auth with --store {store!r}: only a Redis store can hold logins")
