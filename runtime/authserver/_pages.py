"""The pages a person sees: the consent page, the development login, errors. Plain HTML, no
script (the forms post by themselves), every value escaped."""

from __future__ import annotations

from html import escape
from urllib.parse import urlsplit

__all__ = ["consent_page", "dev_login_page", "error_page"]

_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;"
    "color:#1a1a1a}h1{font-size:1.4rem}code{background:#f0f0f0;padding:0 .2rem}"
    "ul{padding-left:1.2rem}.actions{display:flex;gap:.8rem;margin-top:1.5rem}"
    "button{font-size:1rem;padding:.5rem 1.2rem;border-radius:.3rem;border:1px solid #888;"
    "background:#fff;cursor:pointer}button.primary{background:#1a5fb4;color:#fff;"
    "border-color:#1a5fb4}.warn{background:#fff3cd;border:1px solid #e0b400;padding:.6rem}"
)


def _page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body>{body}</body></html>\n"
    )


def consent_page(
    *,
    action: str,
    transaction: str,
    client_name: str | None,
    client_id: str,
    redirect_uri: str,
    scopes: list[str],
    resource: str,
) -> str:
    """Asks the person whether ``client_name`` may act for them at ``resource``, naming where
    the answer goes (the redirect URI's host: a look-alike client name cannot hide it)."""
    who = escape(client_name or "An unnamed application")
    host = escape(urlsplit(redirect_uri).netloc)
    items = "".join(f"<li><code>{escape(scope)}</code></li>" for scope in scopes)
    scope_part = f"<p>It asks for:</p><ul>{items}</ul>" if scopes else ""
    body = (
        f"<h1>{who} wants to use an MCP server as you</h1>"
        f"<p>Server: <code>{escape(resource)}</code></p>{scope_part}"
        f"<p>Client id <code>{escape(client_id)}</code>; after you answer, your browser goes "
        f"back to <code>{host}</code>.</p>"
        f'<form method="post" action="{escape(action)}">'
        f'<input type="hidden" name="transaction" value="{escape(transaction)}">'
        '<div class="actions">'
        '<button class="primary" type="submit" name="decision" value="approve">Allow</button>'
        '<button type="submit" name="decision" value="deny">Deny</button>'
        "</div></form>"
    )
    return _page("Allow access?", body)


def dev_login_page(*, action: str, state: str, users: list[str]) -> str:
    buttons = "".join(
        f'<button type="submit" name="user" value="{escape(user)}">{escape(user)}</button>'
        for user in users
    )
    body = (
        "<h1>Development login</h1>"
        '<p class="warn">DEVELOPMENT ONLY: static users, no password. Anyone who reaches this '
        "server can log in as any of them. Configure an OpenID provider "
        "(<code>--auth oidc --issuer URL</code>) before exposing it.</p>"
        f'<form method="post" action="{escape(action)}">'
        f'<input type="hidden" name="state" value="{escape(state)}">'
        f'<div class="actions">{buttons}</div></form>'
    )
    return _page("Development login", body)


def error_page(title: str, message: str) -> str:
    return _page(title, f"<h1>{escape(title)}</h1><p>{escape(message)}</p>")
